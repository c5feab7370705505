#include "server/stores/store_factory.h"

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

// A snapshot's state must be its kind's: the StoreSnapshot.state field named like the kind,
// or `other` for a kind that adapt.proto does not list.
absl::Status CheckStateMatchesKind(const adapt::v1::StoreSnapshot& snapshot,
                                   const StoreKind& kind) {
  const google::protobuf::Descriptor* d = adapt::v1::StoreSnapshot::descriptor();
  const google::protobuf::OneofDescriptor* oneof = d->FindOneofByName("state");
  const google::protobuf::FieldDescriptor* own = d->FindFieldByName(kind.name);
  const std::string expected =
      own != nullptr && own->containing_oneof() == oneof ? kind.name : "other";
  const google::protobuf::FieldDescriptor* set =
      snapshot.GetReflection()->GetOneofFieldDescriptor(snapshot, oneof);
  if (set != nullptr && set->name() == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("snapshot.", expected, ": missing for a ", kind.name, " store"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> CreateStore(const adapt::v1::StoreSpec& spec,
                                                   kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  ASSIGN_OR_RETURN(const StoreKind* kind, KindOf(spec));
  ASSIGN_OR_RETURN(adapt::v1::StoreSpec normalized, NormalizeSpec(spec));
  return kind->create(normalized, backend);
}

absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend) {
  if (!snapshot.arrays().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot.arrays: lists ", snapshot.arrays_size(),
                     " sections that a lone StoreSnapshot does not carry"));
  }
  return RestoreStore(snapshot, StateArrays(), backend);
}

absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    const StateArrays& arrays,
                                                    kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  ASSIGN_OR_RETURN(const StoreKind* kind, KindOf(snapshot.spec(), "snapshot.spec.kind"));
  RETURN_IF_ERROR(CheckStateMatchesKind(snapshot, *kind));
  if (kind->restore_arrays) return kind->restore_arrays(snapshot, arrays, backend);
  if (!arrays.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot.arrays: the ", kind->name, " kind reads no array sections"));
  }
  return kind->restore(snapshot, backend);
}

}  // namespace adaptd
