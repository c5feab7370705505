// Parsing of adaptctl's store and compile options: --kind, --output and --set KEY=VALUE.
//
// A KEY names a field of the store kind's parameter message (StoreSpec.params.<kind>;
// CompileRequest.faast for compile), found by protobuf reflection, so that new
// parameters need no adaptctl change. VALUE is parsed by the field's type: numbers, booleans
// (true/false, yes/no, 1/0), enums by full name (VARIANT_1A) or by the part after the enum's prefix
// (1a), any case; a repeated field takes a comma-separated list. Stateless; thread-safe.
#ifndef ADAPTD_CLIENT_ADAPTCTL_SETTINGS_H_
#define ADAPTD_CLIENT_ADAPTCTL_SETTINGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "google/protobuf/message.h"

namespace adaptctl {

// The store kinds adapt.proto lists, by their names ("faast", ...): StoreKind values
// STORE_KIND_<NAME>, lower-cased, whose parameters are the StoreSpec.params field <name>.
std::vector<std::string> StoreKindNames();
// A kind name, any case.
absl::StatusOr<adapt::v1::StoreKind> ParseStoreKind(absl::string_view text);
// The StoreSpec.params field of `kind`, or null for a kind without parameters.
const google::protobuf::FieldDescriptor* KindParamsField(adapt::v1::StoreKind kind);
// Every kind's --set keys, for --help.
std::string StoreSettingsHelp();

// "labels", "vector:M" (M >= 1) or "next".
absl::StatusOr<adapt::v1::OutputSpec> ParseOutputSpec(absl::string_view text);

// The names --set accepts for `message`, in field order.
std::vector<std::string> SettableKeys(const google::protobuf::Descriptor& descriptor);

// Sets the field `key` of `message` from `value`. An unknown key is an error that lists the
// valid keys.
absl::Status SetField(google::protobuf::Message& message, absl::string_view key,
                      absl::string_view value);

// Applies KEY=VALUE settings to a spec whose kind is set: "dim" sets StoreSpec.dim, every
// other key a field of the kind's parameters. The kind's parameter message is set even when
// `settings` is empty.
absl::Status ApplyStoreSettings(const std::vector<std::string>& settings,
                                adapt::v1::StoreSpec& spec);

// Applies KEY=VALUE settings to CompileRequest.faast; leaves it unset when there are none.
absl::Status ApplyCompileSettings(const std::vector<std::string>& settings,
                                  adapt::v1::CompileRequest& request);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_SETTINGS_H_
