#include "server/encoders/onnx/onnx_external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

// The messages of onnx.proto that can hold a tensor, and the fields followed in each (field
// numbers from onnx.proto, a published format).
enum class Message { kModel, kGraph, kNode, kAttribute, kTensor, kSparseTensor, kEntry };

// The message a length-delimited `field` of `message` holds; false for a field not followed.
bool Child(Message message, uint32_t field, Message* child) {
  switch (message) {
    case Message::kModel:  // graph = 7
      *child = Message::kGraph;
      return field == 7;
    case Message::kGraph:  // node = 1, initializer = 5, sparse_initializer = 15
      if (field == 1) *child = Message::kNode;
      if (field == 5) *child = Message::kTensor;
      if (field == 15) *child = Message::kSparseTensor;
      return field == 1 || field == 5 || field == 15;
    case Message::kNode:  // attribute = 5
      *child = Message::kAttribute;
      return field == 5;
    case Message::kAttribute:  // t = 5, g = 6, tensors = 10, graphs = 11, sparse_tensor(s) = 22, 23
      if (field == 5 || field == 10) *child = Message::kTensor;
      if (field == 6 || field == 11) *child = Message::kGraph;
      if (field == 22 || field == 23) *child = Message::kSparseTensor;
      return field == 5 || field == 6 || field == 10 || field == 11 || field == 22 || field == 23;
    case Message::kSparseTensor:  // values = 1, indices = 2
      *child = Message::kTensor;
      return field == 1 || field == 2;
    case Message::kTensor:  // external_data = 13
      *child = Message::kEntry;
      return field == 13;
    case Message::kEntry:
      return false;
  }
  return false;
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  // Walks one message of kind `message` spanning the whole of data_.
  bool Walk(Message message, std::set<std::string>* locations, int depth = 0) {
    if (depth > 64) return false;
    bool external = false;   // a tensor's data_location (14) is EXTERNAL (1)
    std::string location;    // a tensor's external_data entry "location"
    std::string key, value;  // an entry's key (1) and value (2)
    while (pos_ < data_.size()) {
      uint64_t tag = 0;
      if (!Varint(&tag)) return false;
      const uint32_t field = static_cast<uint32_t>(tag >> 3);
      switch (tag & 7) {
        case 0: {
          uint64_t number = 0;
          if (!Varint(&number)) return false;
          if (message == Message::kTensor && field == 14) external = number == 1;
          break;
        }
        case 1:
          if (!Skip(8)) return false;
          break;
        case 5:
          if (!Skip(4)) return false;
          break;
        case 2: {
          uint64_t length = 0;
          if (!Varint(&length) || length > data_.size() - pos_) return false;
          const std::string_view bytes = data_.substr(pos_, length);
          pos_ += length;
          Message child;
          if (message == Message::kEntry && (field == 1 || field == 2)) {
            (field == 1 ? key : value) = std::string(bytes);
          } else if (Child(message, field, &child)) {
            if (child == Message::kEntry) {
              Reader entry(bytes);
              std::set<std::string> unused;
              if (!entry.Walk(child, &unused, depth + 1)) return false;
              if (entry.key_ == "location") location = entry.value_;
            } else if (!Reader(bytes).Walk(child, locations, depth + 1)) {
              return false;
            }
          }
          break;
        }
        default:  // groups (3, 4) are not in onnx.proto; anything else is not protobuf
          return false;
      }
    }
    if (message == Message::kEntry) {
      key_ = key;
      value_ = value;
    }
    if (external && !location.empty()) locations->insert(location);
    return true;
  }

 private:
  bool Varint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      *out |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
  std::string key_, value_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> OnnxExternalDataFiles(const std::string& model_path) {
  // Mapped, not read: a model of hundreds of megabytes leaves no copy in memory.
  const int fd = ::open(model_path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("ONNX model '", model_path, "': cannot be read for its external data"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* mapped = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    return absl::FailedPreconditionError(
        absl::StrCat("ONNX model '", model_path, "': cannot be mapped for its external data"));
  }
  std::set<std::string> locations;
  const bool ok = Reader(std::string_view(static_cast<const char*>(mapped), size))
                      .Walk(Message::kModel, &locations);
  if (mapped != nullptr) ::munmap(mapped, size);
  if (!ok) {
    return absl::FailedPreconditionError(
        absl::StrCat("ONNX model '", model_path,
                     "': not a well-formed ONNX protobuf (reading its tensors' "
                     "external data)"));
  }
  return std::vector<std::string>(locations.begin(), locations.end());
}

}  // namespace adaptd
