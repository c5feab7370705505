// The external-data files of an ONNX model: tensors whose data_location is EXTERNAL keep their
// bytes in a file named by their external_data entry "location", relative to the model's folder
// (ONNX's external data format). The onnx encoder's fingerprint reads them as it reads the model.
// Read from the model file's protobuf wire format directly (no ONNX library): the graph's
// initializers and sparse initializers, node attributes' tensors, and subgraphs, at any depth.
// Thread safety: stateless.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_EXTERNAL_DATA_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_EXTERNAL_DATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace adaptd {

// The "location" of every externally stored tensor of the model at `model_path`, each once,
// sorted; empty for a model that keeps all its data inside. A file that is not a well-formed
// protobuf is FailedPrecondition naming it.
absl::StatusOr<std::vector<std::string>> OnnxExternalDataFiles(const std::string& model_path);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_EXTERNAL_DATA_H_
