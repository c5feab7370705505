#include "server/encoders/bert/model_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace adaptd::bert {

absl::StatusOr<std::string> ReadModelFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

absl::StatusOr<nlohmann::json> OptionalJsonFile(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return nlohmann::json::object();
  absl::StatusOr<std::string> text = ReadModelFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a JSON object"));
  }
  return j;
}

}  // namespace adaptd::bert
