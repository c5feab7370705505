// Turning API examples into encoded ExampleBatches: target validation and encoding. Pure
// functions; thread-safe.
#ifndef ADAPTD_SERVER_CORE_EXAMPLES_H_
#define ADAPTD_SERVER_CORE_EXAMPLES_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "google/protobuf/repeated_field.h"
#include "server/base/utf8.h"
#include "server/encoders/encoder.h"
#include "server/stores/store.h"

namespace adaptd {

inline constexpr size_t kMaxLabelBytes = 256;

// A label target: 1 to kMaxLabelBytes bytes of UTF-8; INVALID_ARGUMENT naming `field`.
absl::Status CheckLabel(const std::string& label, absl::string_view field);
// A vector target of a vector:m store: exactly m finite floats; INVALID_ARGUMENT naming
// `field` (or `field`.values[j]).
absl::Status CheckTargetVector(const google::protobuf::RepeatedField<float>& values, int64_t m,
                               absl::string_view field);

// Validates every example's target against `output` and encodes the inputs with `encoder`.
// `expected_dim` is the store's dimension (0 while unfixed). Errors are InvalidArgument naming
// `examples[i]...`.
absl::StatusOr<ExampleBatch> EncodeExamples(
    const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples,
    const adapt::v1::OutputSpec& output, const Encoder& encoder, int64_t expected_dim,
    int64_t max_dim);

// Encodes the items of a sequence for a `next` store (ExampleBatch::sequence). Errors name
// `sequence[i]`.
absl::StatusOr<ExampleBatch> EncodeSequence(
    const google::protobuf::RepeatedPtrField<adapt::v1::Input>& sequence, const Encoder& encoder,
    int64_t expected_dim, int64_t max_dim);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_EXAMPLES_H_
