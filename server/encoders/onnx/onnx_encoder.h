// OnnxEncoder: the `onnx` encoder type, a user's frozen ONNX model run by ONNX Runtime
// (docs/ONNX.md). Its input kind is the config's `input`: "vector" (each input's vector is a
// row of the model's float input [batch, width]; each row of its float output [batch, dim] is
// a key), "text" (onnx_text_input.h: WordPiece token ids in, a pooled row out) or "image"
// (onnx_image_input.h: a decoded, preprocessed PNG or JPEG in, a row out). Each kind has
// its own binding at Create and its own Encode path. The width and dim come from the model; a
// model whose batch dimension is fixed at 1 runs item by item. Built once at start-up (loading
// the runtime, the model and a warm-up run); Encode is const and safe to call from many threads.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/encoders/encoder.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {

class OnnxImageInput;
class OnnxTextInput;

// What the server gives every onnx encoder.
struct OnnxEncoderOptions {
  // ONNX Runtime's library (ServerConfig.onnxruntime_library); empty: OrtRuntime::ResolvePath's
  // environment variable, then the dynamic linker.
  std::string library;
  // The server's backend threads (BackendThreadsFromConfig). An encoder with `threads` 0 runs
  // on the runtime's shared pool of this many threads (a pool of its own of this many where the
  // runtime lacks API version 5); 0 leaves ONNX Runtime's default, one per core.
  int backend_threads = 0;
  // The server's device (ServerConfig.device: "cpu" or empty, "cuda", "cuda:N"). On a CUDA
  // device the model runs on ONNX Runtime's CUDA execution provider; a runtime that cannot
  // (CPU-only, or without its provider library) fails the start saying why.
  std::string device;
  // Called with the texts a text encoder cut to max_tokens: 0 once at start (after the
  // warm-up), then after each batch that cut some; may be empty.
  std::function<void(uint64_t texts)> on_truncated;
};

class OnnxEncoder final : public Encoder {
 public:
  // `field` names the config entry ("encoders[i]") in errors. Without ONNX Runtime the error
  // is FailedPrecondition in one line saying how to get it; a missing, corrupt or mismatched
  // model is FailedPrecondition naming the file and the tensor; a bad setting is
  // InvalidArgument naming its field.
  static absl::StatusOr<std::unique_ptr<OnnxEncoder>> Create(
      const adapt::v1::EncoderConfig& config, const std::string& field,
      const OnnxEncoderOptions& options = {});
  ~OnnxEncoder() override;

  const adapt::v1::EncoderInfo& info() const override { return info_; }

  // A vector whose length is not the model's input width, or a text that is empty, not UTF-8
  // or too long, or an input of the other kind, is InvalidArgument naming the input.
  absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                      int64_t expected_dim, int64_t max_dim,
                                      const FieldNamer& field) const override;

  // Whether the model runs on the runtime's shared thread pool, and the threads of its own
  // otherwise (0: ONNX Runtime's default).
  bool shared_pool() const { return shared_pool_; }
  int session_threads() const { return session_threads_; }
  // The CUDA device the model runs on; -1 for the CPU.
  int cuda_device() const { return cuda_device_; }
  // Texts cut to max_tokens since start-up (the warm-up's not counted); 0 for vectors.
  uint64_t truncated_texts() const { return truncated_.load(std::memory_order_relaxed); }

 private:
  OnnxEncoder() = default;

  // Per input kind: binding the model's tensors at Create, and encoding a batch into `out`.
  absl::Status BindVectorInput(const adapt::v1::EncoderConfig& config);
  absl::Status BindTextInput(const adapt::v1::EncoderConfig& config, const std::string& field);
  absl::Status BindImageInput(const adapt::v1::EncoderConfig& config, const std::string& field);
  absl::Status EncodeVectors(const std::vector<const adapt::v1::Input*>& inputs,
                             const FieldNamer& field, EncodedBatch* out) const;
  absl::Status EncodeTexts(const std::vector<const adapt::v1::Input*>& inputs,
                           const FieldNamer& field, EncodedBatch* out) const;
  absl::Status EncodeImages(const std::vector<const adapt::v1::Input*>& inputs,
                            const FieldNamer& field, EncodedBatch* out) const;
  absl::Status WarmUp();
  // EncoderInfo's name, type, kind, dim, normalize and the model's tensors.
  void Describe(const adapt::v1::EncoderConfig& config, int64_t dim);
  absl::Status SetFingerprint(const adapt::v1::EncoderConfig& config);
  // Runs rows [begin, begin + rows) of `packed` and appends their keys to `out`.
  absl::Status RunRows(const std::vector<float>& packed, int64_t begin, int64_t rows,
                       std::vector<float>* out) const;

  adapt::v1::EncoderInfo info_;
  std::string kind_;  // the config's input: "vector", "text" or "image"
  std::unique_ptr<OrtModel> model_;
  std::unique_ptr<OnnxTextInput> text_;    // the text input's tokenizer and tensors
  std::unique_ptr<OnnxImageInput> image_;  // the image input's preprocessing and tensors
  bool shared_pool_ = false;
  int session_threads_ = 0;
  int cuda_device_ = -1;
  mutable std::atomic<uint64_t> truncated_{0};
  std::function<void(uint64_t texts)> on_truncated_;
  std::string input_tensor_;
  std::string output_tensor_;
  int64_t width_ = 0;
  int64_t max_batch_ = 0;  // 1 for a model whose batch dimension is fixed at 1
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENCODER_H_
