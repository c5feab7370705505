#include "server/scheduler/scheduler_flags.h"

#include <string>

#include "server/config/defaults.h"

namespace adaptd {

void AddSchedulerFlags(CLI::App& app, SchedulerFlags* flags) {
  app.add_option("--max-batch-size", flags->max_batch_size,
                 "Predicts run together as one batch, at most; 1 turns batching off [default " +
                     std::to_string(defaults::kMaxBatchSize) + "]")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--max-queue-delay-us", flags->max_queue_delay_us,
                 "Microseconds a batch may wait for more predicts after its first one arrived "
                 "[default " +
                     std::to_string(defaults::kMaxQueueDelayUs) + "]")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  app.add_option("--queue-capacity", flags->queue_capacity,
                 "Requests waiting in the queue, in total; beyond it calls get "
                 "RESOURCE_EXHAUSTED [default " +
                     std::to_string(defaults::kQueueCapacity) + "]")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  app.add_option("--tenant-queue-capacity", flags->tenant_queue_capacity,
                 "Requests of one tenant waiting in the queue [default " +
                     std::to_string(defaults::kTenantQueueCapacity) + "]")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  app.add_option("--backend-threads", flags->backend_threads,
                 "Threads one backend call may use on the host (OpenBLAS, process-wide); 0 = "
                 "cores / workers, at least 1 [default " +
                     std::to_string(defaults::kBackendThreads) + "]")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
}

void ApplySchedulerFlags(const SchedulerFlags& flags, adapt::v1::ServerConfig* config) {
  if (flags.max_batch_size >= 0) config->set_max_batch_size(flags.max_batch_size);
  if (flags.max_queue_delay_us >= 0) config->set_max_queue_delay_us(flags.max_queue_delay_us);
  if (flags.queue_capacity >= 0) config->set_queue_capacity(flags.queue_capacity);
  if (flags.tenant_queue_capacity >= 0) {
    config->set_tenant_queue_capacity(flags.tenant_queue_capacity);
  }
  if (flags.backend_threads >= 0) config->set_backend_threads(flags.backend_threads);
}

}  // namespace adaptd
