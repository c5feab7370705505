// Helpers for the encoder tests: inputs, a field namer, reading test data files.
#ifndef ADAPTD_SERVER_ENCODERS_TEST_UTIL_H_
#define ADAPTD_SERVER_ENCODERS_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "adapt/v1/adapt.pb.h"
#include "server/encoders/encoder.h"

namespace adaptd::testing {

inline adapt::v1::Input Text(const std::string& text) {
  adapt::v1::Input input;
  input.set_text(text);
  return input;
}

inline adapt::v1::Input Vector(const std::vector<float>& values) {
  adapt::v1::Input input;
  for (float v : values) input.mutable_vector()->add_values(v);
  return input;
}

inline std::vector<const adapt::v1::Input*> Pointers(const std::vector<adapt::v1::Input>& inputs) {
  std::vector<const adapt::v1::Input*> out;
  for (const auto& input : inputs) out.push_back(&input);
  return out;
}

inline FieldNamer ExamplesNamer() {
  return [](size_t i) { return "examples[" + std::to_string(i) + "].input"; };
}

inline std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(ADAPTD_ENCODERS_TESTDATA) + "/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace adaptd::testing

#endif  // ADAPTD_SERVER_ENCODERS_TEST_UTIL_H_
