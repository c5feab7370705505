// adaptd's scheduler flags (--max-batch-size, --max-queue-delay-us, --queue-capacity,
// --tenant-queue-capacity, --backend-threads) on the CLI11 app of main, and their overrides of the
// config.
// --workers lives beside the other thread flags in main. Main thread only.
#ifndef ADAPTD_SERVER_SCHEDULER_SCHEDULER_FLAGS_H_
#define ADAPTD_SERVER_SCHEDULER_SCHEDULER_FLAGS_H_

#include <cstdint>

#include "CLI/CLI.hpp"
#include "adapt/v1/config.pb.h"

namespace adaptd {

struct SchedulerFlags {
  // -1: not given on the command line (the config, then the default, decides).
  int64_t max_batch_size = -1;
  int64_t max_queue_delay_us = -1;
  int64_t queue_capacity = -1;
  int64_t tenant_queue_capacity = -1;
  int64_t backend_threads = -1;
};

void AddSchedulerFlags(CLI::App& app, SchedulerFlags* flags);
void ApplySchedulerFlags(const SchedulerFlags& flags, adapt::v1::ServerConfig* config);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SCHEDULER_SCHEDULER_FLAGS_H_
