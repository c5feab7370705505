// Reading a model directory's files (sentence_bert's, and the vocabulary and tokenizer files
// beside an onnx text model): whole files and optional JSON objects, errors naming the path.
// Pure functions of the file system; thread-safe.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_MODEL_FILES_H_
#define ADAPTD_SERVER_ENCODERS_BERT_MODEL_FILES_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace adaptd::bert {

// The whole file; NotFound "<path>: cannot open" when it cannot be opened.
absl::StatusOr<std::string> ReadModelFile(const std::filesystem::path& path);

// A JSON object file that may be absent (then an empty object); InvalidArgument
// "<path>: not a JSON object" when it is something else.
absl::StatusOr<nlohmann::json> OptionalJsonFile(const std::filesystem::path& path);

}  // namespace adaptd::bert

#endif  // ADAPTD_SERVER_ENCODERS_BERT_MODEL_FILES_H_
