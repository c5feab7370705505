#include "server/http/oip_tensors.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace adaptd::http::oip {
namespace {

namespace pb = adapt::v1;
using Json = nlohmann::json;

absl::Status Invalid(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("infer request: ", where, ": ", what));
}

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The elements of `data` in row-major order, nested arrays flattened.
void Flatten(const Json& data, std::vector<const Json*>* out) {
  if (data.is_array()) {
    for (const Json& element : data) Flatten(element, out);
  } else {
    out->push_back(&data);
  }
}

// A little-endian 4-byte length.
uint32_t ReadLength(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
         static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

void AppendLength(uint32_t n, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

// The shape's element count, checked: non-negative dimensions, rank 1 or 2.
absl::StatusOr<std::vector<int64_t>> ShapeOf(const Json& input, const std::string& where) {
  auto it = input.find("shape");
  if (it == input.end() || !it->is_array() || it->empty() || it->size() > 2) {
    return Invalid(where,
                   "shape: expected [N, d] (or [d]) for FP32/FP64, [N] (or [N, 1]) for "
                   "BYTES");
  }
  std::vector<int64_t> shape;
  for (const Json& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return Invalid(where,
                     absl::StrCat("shape: ", Dump(*it), ": each dimension a non-negative integer"));
    }
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// A float tensor's rows (shape [N, d], or [d]) from `values`, as Predict's vector inputs.
absl::Status AddRows(const std::vector<double>& values, const std::vector<int64_t>& shape,
                     const std::string& where, pb::PredictRequest* predict) {
  const int64_t rows = shape.size() == 2 ? shape[0] : 1;
  const int64_t width = shape.back();
  if (rows == 0 || width == 0)
    return Invalid(where, "shape: an empty tensor; send at least one row");
  for (int64_t r = 0; r < rows; ++r) {
    auto* vector = predict->add_inputs()->mutable_vector();
    vector->mutable_values()->Reserve(static_cast<int>(width));
    for (int64_t c = 0; c < width; ++c) {
      vector->add_values(static_cast<float>(values[static_cast<size_t>(r * width + c)]));
    }
  }
  return absl::OkStatus();
}

// The binary part's bytes of one input: its binary_data_size bytes, from `*binary` on.
absl::StatusOr<absl::string_view> TakeBinary(const Json& parameters, const std::string& where,
                                             absl::string_view* binary) {
  const Json& size = parameters["binary_data_size"];
  if (!size.is_number_unsigned()) {
    return Invalid(where, "parameters.binary_data_size: expected a non-negative integer");
  }
  const uint64_t n = size.get<uint64_t>();
  if (n > binary->size()) {
    return Invalid(where, absl::StrCat("parameters.binary_data_size: ", n,
                                       " bytes, but the binary data after the header has ",
                                       binary->size(), " left"));
  }
  absl::string_view bytes = binary->substr(0, n);
  binary->remove_prefix(n);
  return bytes;
}

// One input tensor being read: its JSON, its parameters, whether its data is binary, and how
// the answers name it.
struct Tensor {
  const Json& input;
  const Json& parameters;
  bool in_binary;
  std::string where;
};

// A BYTES tensor's elements, from JSON strings or length-prefixed binary.
absl::Status ReadTexts(const Tensor& t, absl::string_view* binary,
                       std::vector<std::string>* texts) {
  if (!t.in_binary) {
    std::vector<const Json*> elements;
    Flatten(t.input["data"], &elements);
    for (const Json* e : elements) {
      if (!e->is_string()) {
        return Invalid(t.where, absl::StrCat("data[", texts->size(), "]: expected a string"));
      }
      texts->push_back(e->get<std::string>());
    }
    return absl::OkStatus();
  }
  absl::StatusOr<absl::string_view> data = TakeBinary(t.parameters, t.where, binary);
  if (!data.ok()) return data.status();
  absl::string_view rest = *data;
  while (!rest.empty()) {
    if (rest.size() < 4) return Invalid(t.where, "binary data: an element's length cut short");
    const uint32_t n = ReadLength(rest.data());
    rest.remove_prefix(4);
    if (n > rest.size()) {
      return Invalid(t.where, absl::StrCat("binary data: element ", texts->size(), " of ", n,
                                           " bytes runs past binary_data_size"));
    }
    texts->emplace_back(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  return absl::OkStatus();
}

// An FP32 or FP64 tensor's `count` elements (`width` bytes each in binary), from JSON numbers
// or little-endian binary.
absl::Status ReadFloats(const Tensor& t, size_t width, uint64_t count, absl::string_view* binary,
                        std::vector<double>* values) {
  if (!t.in_binary) {
    std::vector<const Json*> elements;
    Flatten(t.input["data"], &elements);
    values->reserve(elements.size());
    for (const Json* e : elements) {
      if (!e->is_number()) {
        return Invalid(
            t.where, absl::StrCat("data[", values->size(), "]: expected a number, got ", Dump(*e)));
      }
      values->push_back(e->get<double>());
    }
    return absl::OkStatus();
  }
  absl::StatusOr<absl::string_view> data = TakeBinary(t.parameters, t.where, binary);
  if (!data.ok()) return data.status();
  if (data->size() != count * width) {
    return Invalid(t.where, absl::StrCat("shape ", Dump(t.input["shape"]), " of ",
                                         t.input["datatype"].get<std::string>(), " is ",
                                         count * width, " bytes, binary_data_size ", data->size()));
  }
  values->resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (width == 4) {
      float f;
      std::memcpy(&f, data->data() + i * 4, 4);
      (*values)[i] = f;
    } else {
      std::memcpy(&(*values)[i], data->data() + i * 8, 8);
    }
  }
  return absl::OkStatus();
}

// Reads the input tensor into `predict`'s inputs.
absl::Status ReadInput(const Json& input, absl::string_view* binary, pb::PredictRequest* predict) {
  if (!input.is_object()) return Invalid("inputs[0]", "expected an object");
  const Json* name = input.contains("name") ? &input["name"] : nullptr;
  if (name == nullptr || !name->is_string()) return Invalid("inputs[0]", "name: expected a string");
  const std::string where = absl::StrCat("input ", name->get<std::string>());
  if (*name != kInput) {
    return Invalid(where, absl::StrCat("no such input; the model's one input is ", kInput));
  }
  const Json* type = input.contains("datatype") ? &input["datatype"] : nullptr;
  if (type == nullptr || !type->is_string()) return Invalid(where, "datatype: expected a string");
  const std::string datatype = type->get<std::string>();
  const bool bytes = datatype == "BYTES";
  const size_t width = datatype == "FP32" ? 4 : datatype == "FP64" ? 8 : 0;
  if (!bytes && width == 0) {
    return Invalid(where, absl::StrCat("datatype ", datatype,
                                       ": expected FP32 or FP64 (vectors) or BYTES (texts)"));
  }
  absl::StatusOr<std::vector<int64_t>> shape = ShapeOf(input, where);
  if (!shape.ok()) return shape.status();
  if (bytes && shape->size() == 2 && (*shape)[1] != 1) {
    return Invalid(where, absl::StrCat("shape ", Dump(input["shape"]),
                                       ": BYTES is [N] or [N, 1], one text a row"));
  }
  uint64_t count = 1;
  for (int64_t d : *shape) count *= static_cast<uint64_t>(d);
  if (count > (uint64_t{1} << 31)) return Invalid(where, "shape: too many elements");

  const Json empty = Json::object();
  const Json& parameters =
      input.contains("parameters") && input["parameters"].is_object() ? input["parameters"] : empty;
  const Tensor tensor{input, parameters, parameters.contains("binary_data_size"), where};
  if (tensor.in_binary && input.contains("data")) {
    return Invalid(where, "both data and parameters.binary_data_size; send one");
  }
  if (!tensor.in_binary && !input.contains("data")) {
    return Invalid(where, "no data and no parameters.binary_data_size");
  }
  auto mismatch = [&](size_t got) {
    return Invalid(where, absl::StrCat("shape ", Dump(input["shape"]), " holds ", count,
                                       " elements, the data ", got));
  };
  if (bytes) {
    std::vector<std::string> texts;
    if (absl::Status s = ReadTexts(tensor, binary, &texts); !s.ok()) return s;
    if (texts.size() != count) return mismatch(texts.size());
    if (texts.empty()) return Invalid(where, "shape: an empty tensor; send at least one text");
    for (std::string& text : texts) predict->add_inputs()->set_text(std::move(text));
    return absl::OkStatus();
  }
  std::vector<double> values;
  if (absl::Status s = ReadFloats(tensor, width, count, binary, &values); !s.ok()) return s;
  if (values.size() != count) return mismatch(values.size());
  return AddRows(values, *shape, where, predict);
}

// Reads the requested outputs; their classification counts set top_k.
absl::Status ReadOutputs(const Json& outputs, InferCall* call) {
  if (!outputs.is_array()) return Invalid("outputs", "expected an array");
  uint32_t top_k = 0;
  for (const Json& output : outputs) {
    if (!output.is_object() || !output.contains("name") || !output["name"].is_string()) {
      return Invalid("outputs", "each output an object with a name");
    }
    RequestedOutput requested{output["name"].get<std::string>(), call->binary_output};
    const std::string where = absl::StrCat("output ", requested.name);
    if (requested.name != kLabels && requested.name != kScores && requested.name != kVectors) {
      return Invalid(where,
                     absl::StrCat("no such output; the outputs are ", kLabels, " and ", kScores,
                                  " (label stores), ", kVectors, " (vector stores)"));
    }
    if (output.contains("parameters") && output["parameters"].is_object()) {
      const Json& parameters = output["parameters"];
      if (parameters.contains("binary_data")) {
        if (!parameters["binary_data"].is_boolean()) {
          return Invalid(where, "parameters.binary_data: expected true or false");
        }
        requested.binary = parameters["binary_data"].get<bool>();
      }
      if (parameters.contains("classification")) {
        const Json& k = parameters["classification"];
        if (!k.is_number_unsigned() || k.get<uint64_t>() == 0 || k.get<uint64_t>() > 1u << 20) {
          return Invalid(where, "parameters.classification: expected a positive integer k");
        }
        const auto kk = static_cast<uint32_t>(k.get<uint64_t>());
        if (top_k != 0 && kk != top_k) {
          return Invalid(where, absl::StrCat("parameters.classification: ", kk,
                                             ", another output asks ", top_k));
        }
        top_k = kk;
      }
    }
    call->outputs.push_back(std::move(requested));
  }
  if (top_k != 0) call->predict.set_top_k(top_k);
  return absl::OkStatus();
}

// One output tensor: its JSON, and its bytes appended to `binary` when it is sent in binary.
Json Output(const char* name, const char* datatype, std::vector<int64_t> shape, Json data,
            const std::string& raw, bool binary, std::string* out) {
  Json output = {{"name", name}, {"datatype", datatype}, {"shape", std::move(shape)}};
  if (binary) {
    output["parameters"] = {{"binary_data_size", raw.size()}};
    out->append(raw);
  } else {
    output["data"] = std::move(data);
  }
  return output;
}

void AppendFloat(float f, std::string* out) {
  char bytes[4];
  std::memcpy(bytes, &f, 4);
  out->append(bytes, 4);
}

}  // namespace

absl::StatusOr<InferCall> ParseInfer(absl::string_view body,
                                     const std::optional<std::string>& header_length) {
  absl::string_view header = body;
  absl::string_view binary;
  if (header_length.has_value()) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(*header_length, &n) || n > body.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kHeaderLengthHeader, ": \"", *header_length,
          "\": expected the length in bytes of the JSON part of the body, at most the body's ",
          body.size()));
    }
    header = body.substr(0, n);
    binary = body.substr(n);
  }
  // nlohmann/json stops reading at a NUL byte: binary data sent without the header's length
  // would otherwise pass unseen.
  const bool nul = header.find('\0') != absl::string_view::npos;
  Json json = nul ? Json(Json::value_t::discarded)
                  : Json::parse(header.begin(), header.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Invalid("the body", header_length.has_value()
                                   ? absl::StrCat("the first ", header.size(),
                                                  " bytes (Inference-Header-Content-Length) are "
                                                  "not a JSON object")
                                   : std::string("not a JSON object"));
  }
  InferCall call;
  if (json.contains("id")) {
    if (!json["id"].is_string()) return Invalid("id", "expected a string");
    call.id = json["id"].get<std::string>();
  }
  if (json.contains("parameters") && json["parameters"].is_object()) {
    const Json& parameters = json["parameters"];
    if (parameters.contains("binary_data_output")) {
      if (!parameters["binary_data_output"].is_boolean()) {
        return Invalid("parameters.binary_data_output", "expected true or false");
      }
      call.binary_output = parameters["binary_data_output"].get<bool>();
    }
  }
  if (!json.contains("inputs") || !json["inputs"].is_array() || json["inputs"].size() != 1) {
    return Invalid("inputs", absl::StrCat("expected one input, ", kInput));
  }
  if (absl::Status s = ReadInput(json["inputs"][0], &binary, &call.predict); !s.ok()) return s;
  if (!binary.empty()) {
    return Invalid("the body", absl::StrCat(binary.size(),
                                            " bytes of binary data past the inputs' "
                                            "binary_data_size"));
  }
  if (json.contains("outputs")) {
    if (absl::Status s = ReadOutputs(json["outputs"], &call); !s.ok()) return s;
  }
  return call;
}

absl::StatusOr<InferAnswer> WriteInfer(const InferCall& call, absl::string_view model,
                                       const pb::PredictResponse& response) {
  const auto rows = static_cast<int64_t>(response.predictions_size());
  bool vectors = false;
  for (const pb::Prediction& p : response.predictions()) vectors = vectors || p.vector_size() > 0;
  std::vector<RequestedOutput> outputs = call.outputs;
  if (outputs.empty()) {
    if (vectors) {
      outputs.push_back({kVectors, call.binary_output});
    } else {
      outputs.push_back({kLabels, call.binary_output});
      outputs.push_back({kScores, call.binary_output});
    }
  }
  Json answer = {{"model_name", std::string(model)},
                 {"model_version", absl::StrCat(response.version())}};
  if (call.id.has_value()) answer["id"] = *call.id;
  Json tensors = Json::array();
  std::string binary;
  for (const RequestedOutput& output : outputs) {
    const bool wants_vectors = output.name == kVectors;
    if (wants_vectors != vectors) {
      return absl::InvalidArgumentError(absl::StrCat(
          "infer request: output ", output.name, ": the model ", model, " has the outputs ",
          vectors ? absl::StrCat(kVectors) : absl::StrCat(kLabels, " and ", kScores)));
    }
    std::string raw;
    Json data = Json::array();
    if (wants_vectors) {
      const int64_t width = rows > 0 ? response.predictions(0).vector_size() : 0;
      for (const pb::Prediction& p : response.predictions()) {
        if (p.vector_size() != width) {
          return absl::InternalError("infer: predictions of different widths");
        }
        for (float v : p.vector()) {
          output.binary ? AppendFloat(v, &raw) : data.push_back(v);
        }
      }
      tensors.push_back(
          Output(kVectors, "FP32", {rows, width}, std::move(data), raw, output.binary, &binary));
      continue;
    }
    const int64_t k = rows > 0 ? response.predictions(0).labels_size() : 0;
    const bool labels = output.name == kLabels;
    for (const pb::Prediction& p : response.predictions()) {
      if (p.labels_size() != k) return absl::InternalError("infer: predictions of different k");
      for (const pb::LabelScore& l : p.labels()) {
        if (labels) {
          if (output.binary) {
            AppendLength(static_cast<uint32_t>(l.label().size()), &raw);
            raw.append(l.label());
          } else {
            data.push_back(l.label());
          }
        } else {
          output.binary ? AppendFloat(l.score(), &raw) : data.push_back(l.score());
        }
      }
    }
    tensors.push_back(Output(labels ? kLabels : kScores, labels ? "BYTES" : "FP32", {rows, k},
                             std::move(data), raw, output.binary, &binary));
  }
  answer["outputs"] = std::move(tensors);
  InferAnswer out;
  out.body = Dump(answer);
  if (!binary.empty()) {
    out.header_length = out.body.size();
    out.body.append(binary);
  }
  return out;
}

std::string ModelMetadata(absl::string_view model, const pb::StoreInfo& store, bool text_input) {
  const int64_t d = store.spec().dim() > 0 ? static_cast<int64_t>(store.spec().dim()) : -1;
  Json input = {{"name", kInput}};
  if (text_input) {
    input["datatype"] = "BYTES";
    input["shape"] = Json::array({-1});
  } else {
    input["datatype"] = "FP32";
    input["shape"] = Json::array({-1, d});
  }
  Json outputs = Json::array();
  const pb::OutputSpec& spec = store.spec().output();
  if (spec.kind() == pb::OutputSpec::KIND_VECTOR || spec.kind() == pb::OutputSpec::KIND_NEXT) {
    const int64_t m = spec.kind() == pb::OutputSpec::KIND_VECTOR && spec.dim() > 0
                          ? static_cast<int64_t>(spec.dim())
                          : -1;
    outputs.push_back({{"name", kVectors}, {"datatype", "FP32"}, {"shape", {-1, m}}});
  } else {
    outputs.push_back({{"name", kLabels}, {"datatype", "BYTES"}, {"shape", {-1, -1}}});
    outputs.push_back({{"name", kScores}, {"datatype", "FP32"}, {"shape", {-1, -1}}});
  }
  Json metadata = {{"name", std::string(model)},
                   {"versions", Json::array({absl::StrCat(store.version())})},
                   {"platform", "adaptd"},
                   {"inputs", Json::array({std::move(input)})},
                   {"outputs", std::move(outputs)}};
  return Dump(metadata);
}

std::string ErrorBody(const absl::Status& status) {
  return Dump({{"error", std::string(status.message())},
               {"code", absl::StatusCodeToString(status.code())},
               {"message", std::string(status.message())}});
}

}  // namespace adaptd::http::oip
