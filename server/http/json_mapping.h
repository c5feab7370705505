// The HTTP front end's bodies: protobuf's JSON mapping of the request and response messages,
// with the proto field names (`tenant`, `top_k`; lowerCamelCase names are accepted on input
// too) and 64-bit integers as strings, as the mapping writes them. Thread-safe.
#ifndef ADAPTD_SERVER_HTTP_JSON_MAPPING_H_
#define ADAPTD_SERVER_HTTP_JSON_MAPPING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace adaptd::http {

// Parses `json` (an empty body reads as {}) into `message`. INVALID_ARGUMENT naming the problem
// (malformed JSON, a field of the wrong type, a field the message does not have) and, where the
// parser says it, the field; `message` is then unspecified.
absl::Status ParseJson(absl::string_view json, google::protobuf::Message* message);

// `message` in the JSON mapping, fields with their default values left out; INTERNAL when
// the message holds a string that is not UTF-8.
absl::StatusOr<std::string> PrintJson(const google::protobuf::Message& message);

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_JSON_MAPPING_H_
