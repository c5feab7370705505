#include "server/base/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace adaptd {

absl::Status ValidateName(absl::string_view field, absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": longer than ", kMaxNameLength, " characters (", name.size(), ")"));
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(name[0]))) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must start with a letter or a digit, got \"", name, "\""));
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (!absl::ascii_isalnum(u) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": only letters, digits, '.', '_' and '-' are allowed, got \"",
                       absl::CHexEscape(name), "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateStoreNames(absl::string_view tenant, absl::string_view store) {
  if (absl::Status s = ValidateName("tenant", tenant); !s.ok()) return s;
  return ValidateName("store", store);
}

absl::StatusOr<std::pair<std::string, std::string>> ParseBaseName(absl::string_view tenant,
                                                                  absl::string_view base) {
  const size_t slash = base.find('/');
  absl::string_view owner = tenant, store = base;
  if (slash != absl::string_view::npos) {
    owner = base.substr(0, slash);
    store = base.substr(slash + 1);
  }
  if (absl::Status s = ValidateName("spec.base", owner); !s.ok()) return s;
  if (absl::Status s = ValidateName("spec.base", store); !s.ok()) return s;
  return std::make_pair(std::string(owner), std::string(store));
}

}  // namespace adaptd
