#include "server/http/json_mapping.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace adaptd::http {

absl::Status ParseJson(absl::string_view json, google::protobuf::Message* message) {
  if (json.find_first_not_of(" \t\r\n") == absl::string_view::npos) json = "{}";
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt field is an error, never ignored
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("request body (", message->GetTypeName(),
                                                 " in JSON): ", status.message().as_string()));
}

absl::StatusOr<std::string> PrintJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("the answer (", message.GetTypeName(),
                                            ") has no JSON form: ", status.message().as_string()));
  }
  return json;
}

}  // namespace adaptd::http
