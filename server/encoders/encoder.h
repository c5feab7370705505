// Encoder: a frozen function from API inputs (vectors, texts) to key vectors. Encoders are
// built once at start-up from the server config and never change; every method is const and
// safe to call from many threads. Each one describes itself in an EncoderInfo: its input kind
// ("vector", "text" or "image"), its output dimension (0: any, set by the input) and a fingerprint
// of the encoder and its weights (fingerprint.h), which a store records at creation.
//
// Layout: Encode returns rows × dim floats, row-major, one input per row.
#ifndef ADAPTD_SERVER_ENCODERS_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_ENCODER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

struct EncodedBatch {
  int64_t rows = 0;
  int64_t dim = 0;
  std::vector<float> keys;  // rows × dim
  // The rows (ascending) whose text the encoder cut to its maximum length before encoding;
  // only encoders that count truncation fill it (onnx text).
  std::vector<int64_t> truncated;
};

// Names input i in error messages, e.g. "examples[3].input" or "inputs[3]".
using FieldNamer = std::function<std::string(size_t)>;

// What an input holds, for error messages: "a vector", "text", "an image" or "nothing".
inline const char* InputKindName(const adapt::v1::Input& input) {
  switch (input.value_case()) {
    case adapt::v1::Input::kVector:
      return "a vector";
    case adapt::v1::Input::kText:
      return "text";
    case adapt::v1::Input::kImage:
      return "an image";
    default:
      return "nothing";
  }
}

class Encoder {
 public:
  virtual ~Encoder() = default;

  virtual const adapt::v1::EncoderInfo& info() const = 0;

  bool takes_text() const { return info().input_kind() == "text"; }
  // The output dimension; 0 for an encoder that passes any dimension through.
  int64_t dim() const { return info().dim(); }
  const std::string& fingerprint() const { return info().fingerprint(); }

  // Encodes a batch. `expected_dim` > 0 demands that dimension (a store's fixed one); 0 lets
  // the first input set it for an encoder of any dimension. `max_dim` bounds it. Errors are
  // InvalidArgument naming the input's field.
  virtual absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                              int64_t expected_dim, int64_t max_dim,
                                              const FieldNamer& field) const = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ENCODER_H_
