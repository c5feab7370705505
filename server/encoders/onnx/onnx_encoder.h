// OnnxEncoder: the `onnx` encoder type, a user's frozen ONNX model run by ONNX Runtime
// (docs/ONNX.md). This slice takes vectors: each input's vector is a row of the model's float
// input [batch, width]; each row of its float output [batch, dim] is a key. The width and dim
// come from the model; a model whose batch dimension is fixed at 1 runs item by item. Built
// once at start-up (loading the runtime, the model and a warm-up run); Encode is const and
// safe to call from many threads.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/encoders/encoder.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {

class OnnxEncoder final : public Encoder {
 public:
  // `field` names the config entry ("encoders[i]") in errors. Without ONNX Runtime the error
  // is FailedPrecondition in one line saying how to get it; a missing, corrupt or mismatched
  // model is FailedPrecondition naming the file and the tensor; a bad setting is
  // InvalidArgument naming its field.
  static absl::StatusOr<std::unique_ptr<OnnxEncoder>> Create(const adapt::v1::EncoderConfig& config,
                                                             const std::string& field);

  const adapt::v1::EncoderInfo& info() const override { return info_; }

  // A vector whose length is not the model's input width is InvalidArgument naming the input.
  absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                      int64_t expected_dim, int64_t max_dim,
                                      const FieldNamer& field) const override;

 private:
  OnnxEncoder() = default;

  absl::Status BindTensors(const adapt::v1::EncoderConfig& config);
  absl::Status SetFingerprint(const adapt::v1::EncoderConfig& config);
  // Runs rows [begin, begin + rows) of `packed` and appends their keys to `out`.
  absl::Status RunRows(const std::vector<float>& packed, int64_t begin, int64_t rows,
                       std::vector<float>* out) const;

  adapt::v1::EncoderInfo info_;
  std::unique_ptr<OrtModel> model_;
  std::string input_tensor_;
  std::string output_tensor_;
  int64_t width_ = 0;
  int64_t max_batch_ = 0;  // 1 for a model whose batch dimension is fixed at 1
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_
