#include "server/scheduler/scheduler_config.h"

#include <algorithm>
#include <thread>

#include "server/config/defaults.h"

namespace adaptd {

SchedulerOptions SchedulerOptionsFromConfig(const adapt::v1::ServerConfig& config) {
  SchedulerOptions o;
  o.workers = config.worker_threads() > 0
                  ? static_cast<int>(config.worker_threads())
                  : static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  o.max_batch_size = static_cast<int>(config.has_max_batch_size() ? config.max_batch_size()
                                                                  : defaults::kMaxBatchSize);
  o.max_queue_delay = absl::Microseconds(
      config.has_max_queue_delay_us() ? config.max_queue_delay_us() : defaults::kMaxQueueDelayUs);
  o.queue_capacity =
      config.has_queue_capacity() ? config.queue_capacity() : defaults::kQueueCapacity;
  o.tenant_queue_capacity = config.has_tenant_queue_capacity() ? config.tenant_queue_capacity()
                                                               : defaults::kTenantQueueCapacity;
  return o;
}

int BackendThreadsFromConfig(const adapt::v1::ServerConfig& config, unsigned cores) {
  if (config.backend_threads() > 0) return static_cast<int>(config.backend_threads());
  const int workers = SchedulerOptionsFromConfig(config).workers;
  return std::max(1, static_cast<int>(std::max(1u, cores)) / std::max(1, workers));
}

}  // namespace adaptd
