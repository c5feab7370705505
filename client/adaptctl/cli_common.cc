#include "client/adaptctl/cli_common.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/adaptctl/commands.h"

namespace adaptctl {
namespace {

constexpr absl::string_view kUsagePayload = "adaptctl/usage";

}  // namespace

CLI::Validator Positive(bool integer) {
  return CLI::Validator(
      [integer](std::string& text) -> std::string {
        int64_t whole;
        double value;
        const bool ok = integer
                            ? absl::SimpleAtoi(text, &whole) && whole > 0
                            : absl::SimpleAtod(text, &value) && std::isfinite(value) && value > 0;
        if (ok) return "";
        return absl::StrCat(text, " is not a positive ", integer ? "integer" : "number");
      },
      "POSITIVE");
}

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

absl::StatusOr<StoreRef> ParseStoreRef(absl::string_view text) {
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return UsageError(absl::StrCat("\"", text, "\": expected TENANT/STORE"));
  }
  return StoreRef{parts[0], parts[1]};
}

absl::StatusOr<std::unique_ptr<adaptd::Client>> ConnectClient(const GlobalOptions& options) {
  adaptd::ClientOptions client_options;
  client_options.address = options.addr;
  client_options.token = options.token;
  // ADAPTD_TOKEN is read when neither --token nor ADAPTCTL_TOKEN gives one.
  const char* env_token = std::getenv("ADAPTD_TOKEN");
  if (client_options.token.empty() && env_token != nullptr) client_options.token = env_token;
  client_options.tls_ca_file = options.tls_ca;
  client_options.tls_cert_file = options.tls_cert;
  client_options.tls_key_file = options.tls_key;
  client_options.route_to_holders = !options.no_route;
  if (options.timeout_seconds < 0 || !std::isfinite(options.timeout_seconds)) {
    return UsageError("--timeout: expected a positive number of seconds");
  }
  if (options.timeout_seconds > 0) {
    client_options.unary_timeout = absl::Seconds(options.timeout_seconds);
    client_options.stream_timeout = absl::Seconds(options.timeout_seconds);
  }
  return adaptd::Client::Connect(client_options);
}

absl::StatusOr<InputKind> EncoderInputKind(adaptd::Client& client, const adapt::v1::StoreSpec& spec,
                                           const Table& table, const ColumnOptions& columns) {
  absl::StatusOr<adapt::v1::ListEncodersResponse> encoders = client.ListEncoders();
  if (!encoders.ok()) return encoders.status();
  for (const adapt::v1::EncoderInfo& encoder : encoders->encoders()) {
    if (encoder.name() == spec.encoder()) {
      if (encoder.input_kind() == "image") return InputKind::kImage;
      return encoder.input_kind() == "text" ? InputKind::kText : InputKind::kVector;
    }
  }
  const std::string text_col = columns.text_col.empty() ? "text" : columns.text_col;
  return table.ColumnIndex(text_col) >= 0 ? InputKind::kText : InputKind::kVector;
}

void PrintSummary(const Json& summary, bool to_stderr) {
  std::ostream& out = to_stderr ? std::cerr : std::cout;
  out << summary.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  out.flush();
}

}  // namespace adaptctl
