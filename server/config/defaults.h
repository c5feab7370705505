// The server's defaults, each written once: the value a ServerConfig field takes when neither
// a config file nor a flag sets it. DefaultConfig() (config.cc), the engine, the server, the
// layers' own options (SchedulerOptions, JournalOptions, StateDbOptions, MemoryDurability's),
// the hand-off and adaptd's --help read these; defaults_test checks that --help, README.md,
// docs/ and config.proto's comments state the same values. Constants only; no dependencies
// (the header-only adaptd_defaults target).
#ifndef ADAPTD_SERVER_CONFIG_DEFAULTS_H_
#define ADAPTD_SERVER_CONFIG_DEFAULTS_H_

#include <cstdint>

namespace adaptd::defaults {

// Addresses and files.
inline constexpr char kListen[] = "127.0.0.1:50051";        // gRPC listen address
inline constexpr char kMetricsListen[] = "127.0.0.1:9464";  // Prometheus /metrics address
inline constexpr char kHttpListen[] = "off";         // HTTP/JSON address (docs/HTTP.md); off: none
inline constexpr char kDataDir[] = "./adaptd-data";  // the server's data directory

// Limits and threads.
inline constexpr uint64_t kMaxMessageBytes = uint64_t{64} << 20;  // largest gRPC message
inline constexpr uint64_t kMaxCallBytes = uint64_t{1} << 30;      // one Adapt or Forget over HTTP
inline constexpr uint32_t kWorkerThreads = 0;      // scheduler workers; 0: one per core
inline constexpr uint32_t kCompileThreads = 1;     // threads running compiles
inline constexpr uint32_t kMaxDim = 8192;          // largest key dimension of a store
inline constexpr char kDevice[] = "cpu";           // compute backend
inline constexpr char kBlasCore[] = "auto";        // OpenBLAS kernels (docs/BLAS.md)
inline constexpr uint32_t kTextEncoderDim = 1024;  // dimension of the default `text` encoder
inline constexpr uint32_t kOnnxMaxBatch = 64;      // rows per run of an onnx encoder's model
inline constexpr uint32_t kOnnxThreads = 0;        // threads per run; 0: the backend threads
inline constexpr char kOnnxRuntimeLibrary[] = "libonnxruntime.so.1";  // found by the linker

// Scheduler (docs/SCHEDULER.md).
inline constexpr uint32_t kMaxBatchSize = 32;           // predicts run as one batch, at most
inline constexpr uint32_t kMaxQueueDelayUs = 200;       // a batch's wait for more predicts
inline constexpr uint32_t kQueueCapacity = 10000;       // requests waiting, all tenants
inline constexpr uint32_t kTenantQueueCapacity = 1000;  // requests waiting, per tenant
inline constexpr uint32_t kBackendThreads = 0;  // threads per backend call; 0: cores / workers

// Persistence (docs/DURABILITY.md) and residency (docs/RESIDENCY.md).
inline constexpr bool kLogFsync = true;                            // fsync the log per write
inline constexpr uint64_t kSnapshotLogBytes = uint64_t{64} << 20;  // checkpoint past this log
inline constexpr uint32_t kMaxExampleIds = 65536;                  // ids each store remembers
inline constexpr uint64_t kStateMapBytes = uint64_t{1} << 40;      // state database map size
inline constexpr uint64_t kMemoryBudgetBytes = 0;                  // loaded stores; 0: no limit

// The durable log in etcd and object storage (docs/DURABLE_LOG.md); off unless
// --etcd-endpoints is given.
inline constexpr char kEtcdPrefix[] = "/adaptd/";               // every key of the deployment's
inline constexpr uint32_t kEtcdLeaseTtlSeconds = 5;             // the claim's lease
inline constexpr char kS3Region[] = "us-east-1";                // the object store's region
inline constexpr uint64_t kEtcdQuotaBytes = uint64_t{2} << 30;  // etcd's own default quota

// Security, quotas and shutdown (docs/SECURITY.md); a quota of 0 is unlimited.
inline constexpr uint32_t kShutdownGraceSeconds = 10;  // in-flight calls' time after SIGTERM
inline constexpr uint64_t kQuotaMaxStores = 0;         // stores per tenant
inline constexpr uint64_t kQuotaMaxMemoryBytes = 0;    // memory of a tenant's stores
inline constexpr double kQuotaExamplesPerSecond = 0;   // examples a tenant adapts per second

// Metrics and cluster (docs/CLUSTER_ETCD.md).
inline constexpr uint32_t kMetricsTopTenants = 10;    // busiest tenants with their own series
inline constexpr uint32_t kUsageIntervalMs = 1000;    // the members' usage exchange
inline constexpr uint32_t kRestartGraceSeconds = 60;  // a SIGTERM'd member keeps its shards

}  // namespace adaptd::defaults

#endif  // ADAPTD_SERVER_CONFIG_DEFAULTS_H_
