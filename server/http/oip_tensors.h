// The Open Inference Protocol's (KServe v2, Triton's HTTP/REST protocol) infer bodies, apart
// from the service (docs/HTTP.md, "The Open Inference Protocol"): an infer request, its JSON
// header and the binary tensor data extension's bytes after it, read into a PredictRequest;
// a PredictResponse written back as the protocol's output tensors, in JSON or binary. Pure
// functions; thread-safe.
#ifndef ADAPTD_SERVER_HTTP_OIP_TENSORS_H_
#define ADAPTD_SERVER_HTTP_OIP_TENSORS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd::http::oip {

// The header naming the length of the JSON part of a body with binary tensor data after it.
inline constexpr char kHeaderLengthHeader[] = "Inference-Header-Content-Length";

// The model's one input and its outputs.
inline constexpr char kInput[] = "INPUT";
inline constexpr char kLabels[] = "labels";
inline constexpr char kScores[] = "scores";
inline constexpr char kVectors[] = "vectors";

// An output the request names, and whether its data is wanted in binary.
struct RequestedOutput {
  std::string name;
  bool binary = false;
};

// An infer request, read: the Predict it asks (tenant and store left to the caller), its id
// (echoed in the answer), the outputs it names (none: every output of the store) and whether
// outputs it does not name otherwise are wanted in binary (`binary_data_output`).
struct InferCall {
  adapt::v1::PredictRequest predict;
  std::optional<std::string> id;
  std::vector<RequestedOutput> outputs;
  bool binary_output = false;
};

// Reads an infer body: JSON, or with `header_length` (the Inference-Header-Content-Length
// header's value) that many bytes of JSON followed by the inputs' binary data. One input,
// INPUT: FP32 or FP64 of shape [N, d] (or [d], one row) for vectors, BYTES of shape [N] (or
// [N, 1]) for texts; its data in JSON (nested or flat, row-major) or binary
// (`parameters.binary_data_size` bytes: little-endian floats, or each string as a 4-byte
// little-endian length and its bytes). A requested output's `classification` k sets top_k.
// INVALID_ARGUMENT naming the field, the input or the output otherwise.
absl::StatusOr<InferCall> ParseInfer(absl::string_view body,
                                     const std::optional<std::string>& header_length);

// An infer answer: its body, and the length of its JSON part when binary data follows it.
struct InferAnswer {
  std::string body;
  std::optional<size_t> header_length;
};

// The answer to `call` for the model `model` from `response`: a label store's outputs are
// `labels` (BYTES [N, k]) and `scores` (FP32 [N, k]), a vector store's `vectors` (FP32 [N, M]).
// INVALID_ARGUMENT naming an output the store does not have.
absl::StatusOr<InferAnswer> WriteInfer(const InferCall& call, absl::string_view model,
                                       const adapt::v1::PredictResponse& response);

// The model metadata of a store: its input (FP32 [-1, d], or BYTES [-1] for a text encoder's
// store) and outputs, in JSON.
std::string ModelMetadata(absl::string_view model, const adapt::v1::StoreInfo& store,
                          bool text_input);

// {"error": "<message>", "code": "<CANONICAL_NAME>", "message": "<message>"}: the protocol's
// error body, with the code and message of the front end's other error bodies.
std::string ErrorBody(const absl::Status& status);

}  // namespace adaptd::http::oip

#endif  // ADAPTD_SERVER_HTTP_OIP_TENSORS_H_
