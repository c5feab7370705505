// The scheduler's options from the server config (ServerConfig fields 20-29 and
// worker_threads), with the defaults of server/config/defaults.h for unset fields. Pure;
// thread-safe.
#ifndef ADAPTD_SERVER_SCHEDULER_SCHEDULER_CONFIG_H_
#define ADAPTD_SERVER_SCHEDULER_SCHEDULER_CONFIG_H_

#include "adapt/v1/config.pb.h"
#include "server/scheduler/scheduler.h"

namespace adaptd {

// Everything but the callbacks (run_batch, on_wait, on_batch). Workers: worker_threads, or
// the number of cores (at least 2) when 0.
SchedulerOptions SchedulerOptionsFromConfig(const adapt::v1::ServerConfig& config);

// The thread count the server gives its backend (Backend::SetThreads): backend_threads, or
// max(1, cores / workers) when unset or 0. `cores` is the machine's (0: unknown, taken as 1).
int BackendThreadsFromConfig(const adapt::v1::ServerConfig& config, unsigned cores);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SCHEDULER_SCHEDULER_CONFIG_H_
