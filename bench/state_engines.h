// On-disk engines for per-store state, as compared by state_engine_bench: LMDB, RocksDB and a
// file per store (the layout adaptd uses today). Each engine stores, per store, a small catalog
// record and one large value; the key-value engines keep them under "c/<tenant>/<store>" and
// "s/<tenant>/<store>", the file engine in one file snapshots/<tenant>/<store>.snap whose header
// is the catalog record. Writes become durable at Commit (a checkpoint); adaptd keeps its own
// write-ahead log, so no engine uses its own log.
//
// Thread-safety: none. One thread drives an engine; this is a benchmark, not a server part.
#ifndef ADAPTD_BENCH_STATE_ENGINES_H_
#define ADAPTD_BENCH_STATE_ENGINES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd::bench {

class StateEngine {
 public:
  virtual ~StateEngine() = default;

  virtual std::string Name() const = 0;
  // Opens (creating if needed) the engine in its directory; Close releases every file and map.
  virtual absl::Status Open() = 0;
  virtual void Close() = 0;
  // Writes one store; an empty catalog record writes the value alone (chunks of a large value).
  // Durable only after the next Commit, except where the engine syncs every write (files).
  virtual absl::Status WriteStore(std::string_view tenant, std::string_view store,
                                  std::string_view catalog, std::string_view value) = 0;
  // Makes every write since the last Commit durable: one checkpoint.
  virtual absl::Status Commit() = 0;
  // Reads a store's whole value into *value.
  virtual absl::Status ReadValue(std::string_view tenant, std::string_view store,
                                 std::string* value) = 0;
  // Calls `visit` with (tenant/store, catalog record) for every store that has one.
  virtual absl::Status ScanCatalog(
      const std::function<void(std::string_view, std::string_view)>& visit) = 0;
  // Compacts everything and drops garbage (RocksDB); a no-op where there is nothing to do.
  virtual absl::Status CompactAll() { return absl::OkStatus(); }
  // Waits until background work (compactions) has stopped, so disk usage is settled.
  virtual void WaitIdle() {}
  // How the engine was set up, for the results.
  virtual std::string Settings() const = 0;
};

struct EngineConfig {
  std::string dir;              // the engine's own directory
  uint64_t expected_bytes = 0;  // live bytes the run will hold (LMDB sizes its map from it)
  bool lmdb_readahead = false;  // false: MDB_NORDAHEAD and madvise per value
  int rocksdb_memtable_mib = 256;
};

// name is "lmdb", "rocksdb" or "files".
absl::StatusOr<std::unique_ptr<StateEngine>> MakeStateEngine(std::string_view name,
                                                             const EngineConfig& config);

std::unique_ptr<StateEngine> MakeLmdbEngine(const EngineConfig& config);
std::unique_ptr<StateEngine> MakeRocksDbEngine(const EngineConfig& config);
std::unique_ptr<StateEngine> MakeFileEngine(const EngineConfig& config);

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_STATE_ENGINES_H_
