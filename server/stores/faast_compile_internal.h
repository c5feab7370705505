// The compile's working structs that faast_store.cc (Commit, the destructor) and
// faast_compile.cc (staging, replayed compiles) both need. Private to FaastStore's sources.
#ifndef ADAPTD_SERVER_STORES_FAAST_COMPILE_INTERNAL_H_
#define ADAPTD_SERVER_STORES_FAAST_COMPILE_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapt/v1/adapt.pb.h"
#include "server/stores/faast_state.h"
#include "server/stores/faast_store.h"

namespace adaptd {

// What a compile takes from the store in one locked section.
struct FaastStore::CompileInput {
  FaastStatistics problem;
  adapt::v1::FaastParams params;
  std::shared_ptr<const std::vector<std::string>> names;
  std::shared_ptr<const std::vector<double>> label_vectors;  // embedded_: unit rows
  uint64_t taken = 0;                                        // examples taken from pending_
  uint64_t base_version = 0;
  bool zero_shot = false;
};

// A compile noted by replay: its input less the statistics until a later commit would change
// them (then copied as they were), and the version it publishes.
struct FaastStore::ReplayedCompile {
  CompileInput in;
  bool has_problem = false;
  uint64_t version = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_COMPILE_INTERNAL_H_
