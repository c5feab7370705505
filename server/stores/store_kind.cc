#include "server/stores/store_kind.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "server/stores/spec_checks.h"

namespace adaptd {
namespace {

bool ValidKindName(absl::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_';
  });
}

}  // namespace

StoreKinds& StoreKinds::Global() {
  static StoreKinds* const kinds = [] {
    auto* k = new StoreKinds;
    RegisterBuiltinKinds(*k);
    return k;
  }();
  return *kinds;
}

absl::Status StoreKinds::Register(StoreKind kind) {
  if (kind.id == adapt::v1::STORE_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError("store kind: id must not be STORE_KIND_UNSPECIFIED");
  }
  if (!ValidKindName(kind.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store kind: name '", kind.name, "' must be non-empty [a-z0-9_]"));
  }
  if (!kind.normalize || !kind.create || !kind.restore) {
    return absl::InvalidArgumentError(
        absl::StrCat("store kind ", kind.name, ": normalize, create and restore are required"));
  }
  absl::MutexLock lock(&mu_);
  for (const auto& k : kinds_) {
    if (k->id == kind.id || k->name == kind.name) {
      return absl::AlreadyExistsError(absl::StrCat("store kind ", kind.name, " (id ",
                                                   static_cast<int>(kind.id), ") clashes with ",
                                                   k->name));
    }
  }
  kinds_.push_back(std::make_unique<const StoreKind>(std::move(kind)));
  std::sort(kinds_.begin(), kinds_.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  return absl::OkStatus();
}

const StoreKind* StoreKinds::Find(adapt::v1::StoreKind id) const {
  absl::MutexLock lock(&mu_);
  for (const auto& k : kinds_) {
    if (k->id == id) return k.get();
  }
  return nullptr;
}

const StoreKind* StoreKinds::Find(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  for (const auto& k : kinds_) {
    if (k->name == name) return k.get();
  }
  return nullptr;
}

std::vector<const StoreKind*> StoreKinds::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<const StoreKind*> all;
  for (const auto& k : kinds_) all.push_back(k.get());
  return all;
}

std::string StoreKinds::Names() const {
  std::vector<const StoreKind*> all = All();
  std::string names;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) absl::StrAppend(&names, i + 1 == all.size() ? " or " : ", ");
    absl::StrAppend(&names, all[i]->name);
  }
  return names;
}

std::string KindName(adapt::v1::StoreKind id) {
  const StoreKind* kind = StoreKinds::Global().Find(id);
  return kind == nullptr ? "unspecified" : kind->name;
}

absl::StatusOr<const StoreKind*> KindOf(const adapt::v1::StoreSpec& spec, absl::string_view field) {
  if (spec.kind() == adapt::v1::STORE_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be set (", StoreKinds::Global().Names(), ")"));
  }
  const StoreKind* kind = StoreKinds::Global().Find(spec.kind());
  if (kind == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": unknown store kind ",
                                                   static_cast<int>(spec.kind()), " (expected ",
                                                   StoreKinds::Global().Names(), ")"));
  }
  return kind;
}

absl::StatusOr<adapt::v1::StoreSpec> NormalizeSpec(const adapt::v1::StoreSpec& spec) {
  absl::StatusOr<const StoreKind*> kind = KindOf(spec);
  if (!kind.ok()) return kind.status();
  const StoreKind& k = **kind;
  if (absl::Status s = CheckSpecKindAndDim(spec, k.id, k.name.c_str(), k.max_dim); !s.ok()) {
    return s;
  }
  return k.normalize(spec);
}

absl::StatusOr<adapt::v1::StoreSpec> SmallSpec(const StoreKind& kind, uint32_t dim,
                                               const adapt::v1::OutputSpec& output) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(kind.id);
  spec.set_encoder("identity");
  spec.set_dim(dim);
  *spec.mutable_output() = output;
  const google::protobuf::FieldDescriptor* field =
      adapt::v1::StoreSpec::descriptor()->FindFieldByName(kind.name);
  if (field == nullptr || field->message_type() != kind.params) {
    if (kind.small_params.empty()) return spec;
    return absl::InvalidArgumentError(absl::StrCat("store kind ", kind.name,
                                                   ": small_params given for a kind whose "
                                                   "parameters are not a StoreSpec field"));
  }
  google::protobuf::Message* params = spec.GetReflection()->MutableMessage(&spec, field);
  if (!google::protobuf::TextFormat::ParseFromString(kind.small_params, params)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store kind ", kind.name, ": small_params do not parse: ", kind.small_params));
  }
  return spec;
}

}  // namespace adaptd
