// The encoders a server hosts, built from the config at start-up and immutable afterwards
// (safe to read from any thread).
#ifndef ADAPTD_SERVER_ENCODERS_ENCODER_SET_H_
#define ADAPTD_SERVER_ENCODERS_ENCODER_SET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/encoders/encoder.h"

namespace adaptd {

// What the server gives its encoders beside their own configs.
struct EncoderSetOptions {
  // ONNX Runtime's library for onnx encoders (ServerConfig.onnxruntime_library; empty: the
  // environment variable, then the dynamic linker).
  std::string onnxruntime_library;
  // The server's backend threads: the threads of onnx encoders whose `threads` is 0.
  int backend_threads = 0;
  // The server's device (ServerConfig.device): onnx encoders run on ONNX Runtime's CUDA
  // execution provider for "cuda" and "cuda:N".
  std::string device;
  // Called with an encoder's name and the texts it cut to its max_tokens (onnx text encoders:
  // with 0 once at start, then after each batch that cut some); may be empty.
  std::function<void(const std::string& encoder, uint64_t texts)> on_truncated_texts;
};

// The options of `config`: its onnxruntime_library, BackendThreadsFromConfig on this
// machine's cores and its device.
EncoderSetOptions EncoderSetOptionsFromConfig(const adapt::v1::ServerConfig& config);

class EncoderSet {
 public:
  // Builds every configured encoder; an unknown type or a duplicate name is InvalidArgument
  // naming `encoders[i]`. Encoders that compute (e.g. a transformer) run on `backend`, which
  // must outlive the set; it may be null when no configured encoder needs one.
  static absl::StatusOr<std::unique_ptr<EncoderSet>> Create(
      const google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig>& configs,
      kernels::Backend* backend = nullptr, const EncoderSetOptions& options = {});

  // nullptr when no encoder has that name.
  const Encoder* Find(const std::string& name) const;
  adapt::v1::ListEncodersResponse List() const;

  // The encoder a store runs with: FailedPrecondition when this server does not host it or
  // its fingerprint differs from the one the store recorded (fingerprint.h).
  absl::StatusOr<const Encoder*> ForStore(const adapt::v1::StoreSpec& spec) const;
  // The same for spec.output.label_encoder; nullptr when the store has none.
  absl::StatusOr<const Encoder*> LabelEncoderForStore(const adapt::v1::StoreSpec& spec) const;
  // At store creation: checks spec.encoder and spec.output.label_encoder (InvalidArgument
  // naming the field; FailedPrecondition when the spec carries a fingerprint that differs)
  // and records their fingerprints (and the label embedding width) in `spec`.
  absl::Status BindToSpec(adapt::v1::StoreSpec* spec) const;

 private:
  std::string Names() const;

  std::map<std::string, std::unique_ptr<Encoder>> encoders_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ENCODER_SET_H_
