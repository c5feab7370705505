#include "server/encoders/bert/safetensors.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace adaptd::bert {
namespace {

// Bytes per element; 0 for a dtype this reader does not know.
int DtypeSize(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2") {
    return 1;
  }
  return 0;
}

constexpr uint64_t kMaxHeaderBytes = 100u << 20;

}  // namespace

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the weights file"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return Parse(std::move(buffer).str(), path);
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Parse(std::string bytes, const std::string& path) {
  auto bad = [&path](auto&&... parts) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid safetensors file: ", parts...));
  };
  if (bytes.size() < 8) return bad("shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  }
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8) {
    return bad("header length ", header_len, " exceeds the file size ", bytes.size());
  }
  nlohmann::json header =
      nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + header_len, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return bad("the header is not a JSON object");

  SafetensorsFile file;
  file.path_ = path;
  file.data_start_ = 8 + header_len;
  const uint64_t data_size = bytes.size() - file.data_start_;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
      return bad("tensor '", name, "' lacks dtype, shape or data_offsets");
    }
    TensorInfo info;
    info.dtype = entry["dtype"].get<std::string>();
    const int elem = DtypeSize(info.dtype);
    if (elem == 0) return bad("tensor '", name, "' has unknown dtype '", info.dtype, "'");
    uint64_t count = 1;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) return bad("tensor '", name, "' has a bad shape");
      const uint64_t v = d.get<uint64_t>();
      if (v != 0 && count > (uint64_t{1} << 40) / v) {
        return bad("tensor '", name, "' shape is too large");
      }
      count *= v;
      info.shape.push_back(static_cast<int64_t>(v));
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return bad("tensor '", name, "' has bad data_offsets");
    }
    info.begin = offsets[0].get<uint64_t>();
    info.end = offsets[1].get<uint64_t>();
    if (info.begin > info.end || info.end > data_size) {
      return bad("tensor '", name, "' data_offsets [", info.begin, ", ", info.end,
                 "] fall outside the data section of ", data_size, " bytes");
    }
    if (info.end - info.begin != count * elem) {
      return bad("tensor '", name, "' holds ", info.end - info.begin, " bytes, but ", info.dtype,
                 " ", ShapeString(info.shape), " needs ", count * elem);
    }
    file.tensors_.emplace(name, std::move(info));
  }
  file.bytes_ = std::move(bytes);
  return file;
}

absl::StatusOr<std::vector<float>> SafetensorsFile::Float32(
    const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": missing tensor '", name, "'"));
  }
  const TensorInfo& info = it->second;
  if (info.dtype != "F32") {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": tensor '", name, "' is ", info.dtype, ", expected F32"));
  }
  if (info.shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor '", name, "' has shape ",
                                                   ShapeString(info.shape), ", expected ",
                                                   ShapeString(shape)));
  }
  std::vector<float> out((info.end - info.begin) / sizeof(float));
  // The file is little-endian, as is every platform this builds for.
  std::memcpy(out.data(), bytes_.data() + data_start_ + info.begin, info.end - info.begin);
  return out;
}

}  // namespace adaptd::bert
