// Test support: the all-MiniLM-L6-v2 directory named by ADAPTD_MINILM_DIR (CMake sets it from
// the cache variable of the same name). A missing model fails the test, unless
// ADAPTD_SKIP_MODEL_TESTS=1 asks to skip it.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_MINILM_DIR_H_
#define ADAPTD_SERVER_ENCODERS_BERT_MINILM_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

#define ADAPTD_REQUIRE_MINILM(dir)                                                                 \
  const char* dir##_env = std::getenv("ADAPTD_MINILM_DIR");                                        \
  const std::string dir = dir##_env ? dir##_env : "";                                              \
  if (dir.empty() || !std::filesystem::exists(std::filesystem::path(dir) / "model.safetensors")) { \
    const char* skip = std::getenv("ADAPTD_SKIP_MODEL_TESTS");                                     \
    if (skip != nullptr && std::string(skip) == "1") {                                             \
      GTEST_SKIP() << "no model at ADAPTD_MINILM_DIR='" << dir                                     \
                   << "' and ADAPTD_SKIP_MODEL_TESTS=1";                                           \
    }                                                                                              \
    FAIL() << "no all-MiniLM-L6-v2 model at ADAPTD_MINILM_DIR='" << dir                            \
           << "' (bash .ci/dev build fetches it; ADAPTD_SKIP_MODEL_TESTS=1 skips)";                \
  }

#endif  // ADAPTD_SERVER_ENCODERS_BERT_MINILM_DIR_H_
