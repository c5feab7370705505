#include "server/stores/store_state.h"

#include <bit>
#include <climits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace adaptd {
namespace {

// Sections are the host's bytes; every platform adaptd builds for is little-endian.
static_assert(std::endian::native == std::endian::little);

using adapt::v1::ArraySection;
using adapt::v1::StoreSnapshot;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The largest message protobuf serializes.
constexpr uint64_t kMaxMessageBytes = INT_MAX;

FieldDescriptor::CppType CppTypeOf(ArraySection::Type type) {
  switch (type) {
    case ArraySection::TYPE_FLOAT32:
      return FieldDescriptor::CPPTYPE_FLOAT;
    case ArraySection::TYPE_FLOAT64:
      return FieldDescriptor::CPPTYPE_DOUBLE;
    case ArraySection::TYPE_UINT32:
      return FieldDescriptor::CPPTYPE_UINT32;
    case ArraySection::TYPE_INT32:
      return FieldDescriptor::CPPTYPE_INT32;
    default:
      return FieldDescriptor::CPPTYPE_MESSAGE;  // never a numeric array
  }
}

// The state message set in `snapshot`'s oneof, or null.
const FieldDescriptor* StateField(const StoreSnapshot& snapshot) {
  const google::protobuf::OneofDescriptor* oneof =
      StoreSnapshot::descriptor()->FindOneofByName("state");
  return snapshot.GetReflection()->GetOneofFieldDescriptor(snapshot, oneof);
}

// Walks `path` from `state`: every part but the last a singular message field (set, when
// `require_set`), the last a repeated field of `type`. On success `*holder` is the message
// holding it (the default instance where a part is unset and not required).
absl::StatusOr<const FieldDescriptor*> Resolve(const Message& state, absl::string_view path,
                                               ArraySection::Type type, bool require_set,
                                               const Message** holder) {
  const Message* m = &state;
  std::vector<absl::string_view> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(std::string(parts[i]));
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", path, ": ", m->GetTypeName(), " has no field ", parts[i]));
    }
    if (i + 1 == parts.size()) {
      if (!f->is_repeated() || f->cpp_type() != CppTypeOf(type)) {
        return absl::InvalidArgumentError(absl::StrCat("field ", path, ": not a repeated field of ",
                                                       ArraySection::Type_Name(type)));
      }
      *holder = m;
      return f;
    }
    if (f->is_repeated() || f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", path, ": ", parts[i], " is not a message field"));
    }
    if (require_set && !m->GetReflection()->HasField(*m, f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", path, ": ", parts[i], " is not set in the header"));
    }
    m = &m->GetReflection()->GetMessage(*m, f);
  }
  return absl::InvalidArgumentError("field: empty path");
}

// The mutable message holding `path` (created along the way) in `state`.
Message* MutableHolder(Message* state, absl::string_view path) {
  Message* m = state;
  std::vector<absl::string_view> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(std::string(parts[i]));
    m = m->GetReflection()->MutableMessage(m, f);
  }
  return m;
}

// The array's elements filled straight into the repeated field's buffer. The reflection call
// that exposes the RepeatedField is deprecated; the Ref API it points to has no buffer access,
// and an element-wise copy of a large array would cost seconds.
template <typename T>
bool FillRepeated(Message* holder, const FieldDescriptor* f, const StateArrayOut& array) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  google::protobuf::RepeatedField<T>* field =
      holder->GetReflection()->MutableRepeatedField<T>(holder, f);
#pragma GCC diagnostic pop
  field->Resize(static_cast<int>(array.count), T{});
  return array.fill(reinterpret_cast<char*>(field->mutable_data()));
}

bool Fill(Message* holder, const FieldDescriptor* f, const StateArrayOut& array) {
  switch (array.type) {
    case ArraySection::TYPE_FLOAT32:
      return FillRepeated<float>(holder, f, array);
    case ArraySection::TYPE_FLOAT64:
      return FillRepeated<double>(holder, f, array);
    case ArraySection::TYPE_UINT32:
      return FillRepeated<uint32_t>(holder, f, array);
    case ArraySection::TYPE_INT32:
      return FillRepeated<int32_t>(holder, f, array);
    default:
      return false;
  }
}

}  // namespace

size_t ArrayElementBytes(ArraySection::Type type) {
  switch (type) {
    case ArraySection::TYPE_FLOAT32:
    case ArraySection::TYPE_UINT32:
    case ArraySection::TYPE_INT32:
      return 4;
    case ArraySection::TYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

absl::StatusOr<StoreSnapshot> InlineState(StoreStateOut& state) {
  StoreSnapshot out = std::move(state.header);
  out.clear_arrays();
  uint64_t bytes = out.ByteSizeLong();
  for (const StateArrayOut& a : state.arrays) {
    // Packed numeric fields: at most the element bytes plus a few of tag and length each.
    bytes += a.count * std::max<size_t>(ArrayElementBytes(a.type), 5) + 16;
    if (a.count > INT_MAX || bytes > kMaxMessageBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the store's state needs about ", bytes, " bytes (array ", a.field, ": ", a.count,
          " elements), more than one protobuf message can hold; it travels only as a "
          "snapshot file"));
    }
  }
  const FieldDescriptor* state_field = StateField(out);
  for (const StateArrayOut& a : state.arrays) {
    if (state_field == nullptr || state_field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InternalError(absl::StrCat("array ", a.field, ": the snapshot has no state"));
    }
    Message* holder_root = out.GetReflection()->MutableMessage(&out, state_field);
    const Message* holder = nullptr;
    absl::StatusOr<const FieldDescriptor*> f =
        Resolve(*holder_root, a.field, a.type, /*require_set=*/false, &holder);
    if (!f.ok()) return absl::InternalError(f.status().message());
    if (!Fill(MutableHolder(holder_root, a.field), *f, a)) {
      return absl::InternalError(
          absl::StrCat("array ", a.field, ": the store wrote another count than ", a.count));
    }
  }
  return out;
}

std::vector<StateArrayOut> StateArrays::AsOut() const {
  std::vector<StateArrayOut> out;
  for (const Section& s : sections_) {
    const size_t width = ArrayElementBytes(s.type);
    out.push_back(
        {s.field, s.type, width == 0 ? 0 : s.bytes.size() / width, [bytes = s.bytes](char* to) {
           std::memcpy(to, bytes.data(), bytes.size());
           return true;
         }});
  }
  return out;
}

absl::Status CheckArraySections(const StoreSnapshot& header) {
  if (header.arrays().empty()) return absl::OkStatus();
  const FieldDescriptor* state_field = StateField(header);
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < header.arrays_size(); ++i) {
    const ArraySection& a = header.arrays(i);
    const std::string where = absl::StrCat("snapshot.arrays[", i, "]");
    if (ArrayElementBytes(a.type()) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unknown element type ", static_cast<int>(a.type())));
    }
    if (state_field == nullptr || state_field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the snapshot holds no state message for field ", a.field()));
    }
    const Message& state = header.GetReflection()->GetMessage(header, state_field);
    const Message* holder = nullptr;
    absl::StatusOr<const FieldDescriptor*> f =
        Resolve(state, a.field(), a.type(), /*require_set=*/true, &holder);
    if (!f.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", state_field->name(), "): ", f.status().message()));
    }
    if (holder->GetReflection()->FieldSize(*holder, *f) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": field ", a.field(), " holds values in the header as well as in a section"));
    }
    if (!seen.insert(a.field()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": field ", a.field(), " has a section already"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<StoreSnapshot> InlineArrays(StoreSnapshot header, const StateArrays& arrays) {
  StoreStateOut state{std::move(header), arrays.AsOut()};
  return InlineState(state);
}

}  // namespace adaptd
