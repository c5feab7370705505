// Reader for the safetensors weight format: an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets}, then the raw tensor bytes.
// The whole file is read into memory at open; every offset, size and dtype is checked then.
//
// Thread safety: immutable after Open; any thread may read.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_SAFETENSORS_H_
#define ADAPTD_SERVER_ENCODERS_BERT_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace adaptd::bert {

struct TensorInfo {
  std::string dtype;           // "F32", "I64", ...
  std::vector<int64_t> shape;  // row-major, outermost first
  uint64_t begin = 0;          // byte range in the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Reads and validates `path`. Errors name the path and what is wrong.
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);
  // Parses an in-memory file (the same checks); `path` only names it in errors.
  static absl::StatusOr<SafetensorsFile> Parse(std::string bytes, const std::string& path);

  // A float32 tensor of exactly `shape`, copied out. NotFound / InvalidArgument name the
  // tensor, the file and the mismatch.
  absl::StatusOr<std::vector<float>> Float32(const std::string& name,
                                             const std::vector<int64_t>& shape) const;

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& path() const { return path_; }
  // The whole file's bytes (e.g. to fingerprint the weights).
  const std::string& bytes() const { return bytes_; }

 private:
  std::string path_;
  std::string bytes_;
  uint64_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

// "[a, b, c]" for error messages.
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace adaptd::bert

#endif  // ADAPTD_SERVER_ENCODERS_BERT_SAFETENSORS_H_
