// The engine every request-handling fuzz target drives: default encoders, a CPU backend, no
// data directory (no log), a small maximum dimension so that one input cannot ask for
// gigabytes, and one store of each registered kind (named like the kind, SmallSpec) of tenant
// "t" with a few examples.
// Built once per process; fuzz targets are single-threaded.
#ifndef ADAPTD_TESTS_FUZZ_ENGINE_FUZZ_ENV_H_
#define ADAPTD_TESTS_FUZZ_ENGINE_FUZZ_ENV_H_

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "server/core/engine.h"

namespace adaptd::fuzz {

inline constexpr uint32_t kMaxDim = 48;

struct EngineEnv {
  std::unique_ptr<kernels::Backend> backend;
  std::unique_ptr<Engine> engine;
  std::vector<std::string> store_names;
};

EngineEnv& Env();

}  // namespace adaptd::fuzz

#endif  // ADAPTD_TESTS_FUZZ_ENGINE_FUZZ_ENV_H_
