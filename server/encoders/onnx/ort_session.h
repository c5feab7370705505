// OrtModel: one ONNX model loaded into an ONNX Runtime session (ort_runtime.h), with its inputs'
// and outputs' names, element types and shapes, and a run over float or int64 input tensors
// giving one float output. The
// session is created at start-up and never changes; Run is safe to call from many threads at
// once (ONNX Runtime's sessions are), and each call owns its tensors.
//
// Layout: tensors are dense, row-major, outermost dimension first; a dimension of -1 is
// dynamic (named or unnamed in the model).
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ORT_SESSION_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ORT_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/encoders/onnx/ort_runtime.h"

namespace adaptd {

struct OrtTensorSpec {
  std::string name;
  int element_type = 0;  // ort::kElementFloat, ort::kElementInt64, ...
  std::vector<int64_t> dims;
};

// One input of a run: a dense tensor on the caller's buffer (not copied; it must outlive the
// run). element_type is ort::kElementFloat or ort::kElementInt64.
struct OrtInput {
  std::string name;
  int element_type = 0;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t bytes = 0;
};

struct OrtFloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct OrtModelOptions {
  // Threads inside one Run (0: the runtime's default, one per core).
  int intra_op_threads = 0;
  // Run on the runtime's shared pool instead of a pool of the session's own (ignores
  // intra_op_threads); only where the runtime has one (OrtRuntime::global_threads() > 0).
  bool global_pool = false;
  // Keep the CPU arena and memory patterns (suits inputs of few shapes); false releases
  // memory after each shape (docs/ONNX.md, "Threads, arena, warm-up").
  bool arena = true;
  // The CUDA device the session runs on (ONNX Runtime's CUDA execution provider, with the CPU's
  // for what it does not run); -1: the CPU only. Needs a runtime OrtRuntime::Cuda() accepts.
  int cuda_device = -1;
};

class OrtModel {
 public:
  // Loads the model file. A file the runtime cannot open or parse is FailedPrecondition
  // naming it; so is a CUDA device asked of a runtime that cannot run one (OrtRuntime::Cuda).
  static absl::StatusOr<std::unique_ptr<OrtModel>> Create(const OrtRuntime* runtime,
                                                          const std::string& path,
                                                          const OrtModelOptions& options);
  ~OrtModel();
  OrtModel(const OrtModel&) = delete;
  OrtModel& operator=(const OrtModel&) = delete;

  const std::vector<OrtTensorSpec>& inputs() const { return inputs_; }
  const std::vector<OrtTensorSpec>& outputs() const { return outputs_; }
  const std::string& path() const { return path_; }

  // Runs the model with `values` (of `shape`) as the float input `input` and returns the
  // float output `output`. The model must have no other input. Errors name the file.
  absl::StatusOr<OrtFloatTensor> Run(const std::string& input, const std::vector<int64_t>& shape,
                                     std::span<const float> values,
                                     const std::string& output) const;
  // Runs the model with `inputs` (every input the model has) and returns the float output
  // `output`. A tensor the runtime refuses (a wrong shape or type) is InvalidArgument naming
  // the file.
  absl::StatusOr<OrtFloatTensor> Run(std::span<const OrtInput> inputs,
                                     const std::string& output) const;

 private:
  OrtModel(const OrtRuntime* runtime, std::string path) : runtime_(runtime), path_(path) {}

  absl::Status ReadSignature();
  absl::StatusOr<OrtTensorSpec> Describe(size_t index, bool input) const;
  absl::StatusOr<OrtFloatTensor> ReadOutput(ort::OrtValue* value, const std::string& name) const;

  const OrtRuntime* runtime_;
  std::string path_;
  ort::OrtSession* session_ = nullptr;
  ort::OrtMemoryInfo* cpu_ = nullptr;
  std::vector<OrtTensorSpec> inputs_;
  std::vector<OrtTensorSpec> outputs_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ORT_SESSION_H_
