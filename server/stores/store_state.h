// A store's state with its big numeric arrays beside the adapt.v1.StoreSnapshot protobuf
// instead of inside it. A serialized protobuf holds at most 2 GiB and a repeated field at most
// 2^31-1 elements; snapshot file format 2 (server/stores/snapshot_file.h) carries each array as
// a raw section of any size. An array stands for a repeated field of the kind's state message,
// named by its path there ("values", "published.s"); the header leaves that field empty.
//
// Writing: Store::WriteState (store.h) hands a StoreStateOut to a sink under the store's lock.
// Its arrays are fill functions that read the store, so the state is copied once, straight into
// the file. Reading: a kind's restore reads each array through StateArrays::Get, which serves
// the file's section when it had one and the header's repeated field otherwise (format-1 files,
// plain StoreSnapshot messages), so one restore reads both forms.
//
// Thread safety: thread-compatible values. StateArrays and ArrayView view bytes they do not
// own (a decoded file): those must outlive them.
#ifndef ADAPTD_SERVER_STORES_STORE_STATE_H_
#define ADAPTD_SERVER_STORES_STORE_STATE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/snapshot.pb.h"
#include "google/protobuf/repeated_field.h"

namespace adaptd {

template <typename T>
struct ArrayTypeOf;
template <>
struct ArrayTypeOf<float> {
  static constexpr adapt::v1::ArraySection::Type kType = adapt::v1::ArraySection::TYPE_FLOAT32;
};
template <>
struct ArrayTypeOf<double> {
  static constexpr adapt::v1::ArraySection::Type kType = adapt::v1::ArraySection::TYPE_FLOAT64;
};
template <>
struct ArrayTypeOf<uint32_t> {
  static constexpr adapt::v1::ArraySection::Type kType = adapt::v1::ArraySection::TYPE_UINT32;
};
template <>
struct ArrayTypeOf<int32_t> {
  static constexpr adapt::v1::ArraySection::Type kType = adapt::v1::ArraySection::TYPE_INT32;
};

// Bytes per element of `type`; 0 for a type this build does not know.
size_t ArrayElementBytes(adapt::v1::ArraySection::Type type);

// Appends an array's elements, in order, to its place in the file (no alignment assumed).
template <typename T>
class ArrayWriter {
 public:
  ArrayWriter(char* out, uint64_t count) : out_(out), left_(count) {}
  // Elements past the array's count are dropped and counted: the encoder then fails.
  void Put(const T* values, uint64_t n) {
    const uint64_t k = std::min(n, left_);
    std::memcpy(out_, values, k * sizeof(T));
    out_ += k * sizeof(T);
    left_ -= k;
    excess_ += n - k;
  }
  void Put(T value) { Put(&value, 1); }
  // Exactly the count was written.
  bool exact() const { return left_ == 0 && excess_ == 0; }

 private:
  char* out_;
  uint64_t left_;
  uint64_t excess_ = 0;
};

struct StateArrayOut {
  std::string field;
  adapt::v1::ArraySection::Type type = adapt::v1::ArraySection::TYPE_UNSPECIFIED;
  uint64_t count = 0;
  // Writes the `count` elements to `out` (count × element bytes); false when it wrote another
  // number of them.
  std::function<bool(char* out)> fill;
};

struct StoreStateOut {
  // The spec, the kind's state message with the arrays' fields left empty, and no `arrays`.
  adapt::v1::StoreSnapshot header;
  std::vector<StateArrayOut> arrays;

  template <typename T>
  void Add(std::string field, uint64_t count, std::function<void(ArrayWriter<T>&)> fill) {
    arrays.push_back({std::move(field), ArrayTypeOf<T>::kType, count,
                      [count, fill = std::move(fill)](char* out) {
                        ArrayWriter<T> writer(out, count);
                        fill(writer);
                        return writer.exact();
                      }});
  }
  // An array copied from `count` elements at `data`, which must stay valid while the sink runs.
  template <typename T>
  void AddCopy(std::string field, const T* data, uint64_t count) {
    Add<T>(std::move(field), count, [data, count](ArrayWriter<T>& w) { w.Put(data, count); });
  }
  template <typename T>
  void AddCopy(std::string field, const std::vector<T>& values) {
    AddCopy<T>(std::move(field), values.data(), values.size());
  }
};

// What Store::WriteState hands its state to.
using StateSink = absl::FunctionRef<absl::Status(StoreStateOut&)>;

// The state as one protobuf (the format-1 form): every array filled into its repeated field.
// ResourceExhausted when an array has more than 2^31-1 elements or the message would pass
// 2 GiB; Internal when an array's field does not exist or a fill writes another count.
absl::StatusOr<adapt::v1::StoreSnapshot> InlineState(StoreStateOut& state);

// Read access to `size` elements of T at `data` (any alignment).
template <typename T>
class ArrayView {
 public:
  ArrayView() = default;
  ArrayView(const char* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T operator[](uint64_t i) const {
    T value;
    std::memcpy(&value, data_ + i * sizeof(T), sizeof(T));
    return value;
  }
  // out[0, n) = elements [first, first + n).
  void CopyTo(uint64_t first, uint64_t n, T* out) const {
    if (n > 0) std::memcpy(out, data_ + first * sizeof(T), n * sizeof(T));
  }
  std::vector<T> ToVector() const {
    std::vector<T> out(size_);
    CopyTo(0, size_, out.data());
    return out;
  }

 private:
  const char* data_ = nullptr;
  uint64_t size_ = 0;
};

// The array sections of a decoded snapshot file, by field.
class StateArrays {
 public:
  // A section of `type` for `field`: `bytes`, a whole number of elements.
  void Add(std::string field, adapt::v1::ArraySection::Type type, std::string_view bytes) {
    sections_.push_back({std::move(field), type, bytes});
  }
  bool empty() const { return sections_.empty(); }

  // The elements of state field `field`: its section when there is one, else `inline_values`
  // (the header's field). The decoder has checked that a section's type is its field's.
  template <typename T>
  ArrayView<T> Get(absl::string_view field,
                   const google::protobuf::RepeatedField<T>& inline_values) const {
    for (const Section& s : sections_) {
      if (s.field == field && s.type == ArrayTypeOf<T>::kType) {
        return ArrayView<T>(s.bytes.data(), s.bytes.size() / sizeof(T));
      }
    }
    return ArrayView<T>(reinterpret_cast<const char*>(inline_values.data()),
                        static_cast<uint64_t>(inline_values.size()));
  }

  // The sections as arrays to write again (copies of the bytes viewed): for InlineState and
  // for re-encoding a decoded file.
  std::vector<StateArrayOut> AsOut() const;

 private:
  struct Section {
    std::string field;
    adapt::v1::ArraySection::Type type;
    std::string_view bytes;
  };
  std::vector<Section> sections_;
};

// Checks `header.arrays` against the state message set in `header`: each names a distinct
// repeated field (path through set singular messages) of its element type, which the header
// leaves empty, and a known type. InvalidArgument naming "snapshot.arrays[i]".
absl::Status CheckArraySections(const adapt::v1::StoreSnapshot& header);

// `header` with `arrays` filled into their fields and `header.arrays` cleared (the format-1
// form; errors as InlineState's).
absl::StatusOr<adapt::v1::StoreSnapshot> InlineArrays(adapt::v1::StoreSnapshot header,
                                                      const StateArrays& arrays);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORE_STATE_H_
