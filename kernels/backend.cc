// The Backend base class: op names, the shared host backend, and the host (CPU)
// implementations of the operations a device backend may leave to the host. The checks and the
// dispatch of the public methods are in backend_ops.cc.
#include "kernels/backend.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/device_name.h"

namespace adaptd::kernels {

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kGemm:
      return "gemm";
    case Op::kSyrk:
      return "syrk";
    case Op::kSymmetricEigen:
      return "symmetric_eigen";
    case Op::kCholeskySolve:
      return "cholesky_solve";
    case Op::kGemv:
      return "gemv";
    case Op::kSyrkAccumulate:
      return "syrk_accumulate";
    case Op::kTopK:
      return "top_k";
    case Op::kRowScatterAdd:
      return "row_scatter_add";
    case Op::kGroupedGemm:
      return "grouped_gemm";
    case Op::kFalconChunkStep:
      return "falcon_chunk_step";
    case Op::kProductKeyScores:
      return "product_key_scores";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(std::string_view device) {
  const absl::StatusOr<DeviceName> name = ParseDeviceName(device);
  if (!name.ok()) return name.status();
  if (!name->cuda) return MakeCpuBackend();
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeCudaBackend(name->index);
  if (!cuda.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", std::string(device), ": unavailable: ", cuda.status().message()));
  }
  return cuda;
}

Backend& HostBackend() {
  static Backend* const host = MakeCpuBackend().release();
  return *host;
}

void Backend::SetThreads(int) {}

absl::Status Backend::GemvImpl(Trans trans, int64_t m, int64_t n, float alpha, const float* a,
                               int64_t lda, const float* x, float beta, float* y) {
  cpu::Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  return absl::OkStatus();
}

absl::Status Backend::GemvImpl(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                               int64_t lda, const double* x, double beta, double* y) {
  cpu::Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  return absl::OkStatus();
}

absl::Status Backend::SyrkUpperAccumulateImpl(int64_t n, int64_t k, double alpha, const float* a,
                                              int64_t lda, double beta, double* c, int64_t ldc) {
  cpu::SyrkUpperAccumulate(n, k, alpha, a, lda, beta, c, ldc);
  return absl::OkStatus();
}

absl::Status Backend::TopKImpl(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                               int32_t* idx, float* val) {
  cpu::TopK(rows, n, x, ldx, k, idx, val);
  return absl::OkStatus();
}

absl::Status Backend::RowScatterAddImpl(int64_t rows, int64_t n, const int64_t* dst_rows,
                                        float alpha, const float* src, int64_t lds, float* dst,
                                        int64_t ldd, int64_t /*dst_count*/) {
  cpu::RowScatterAdd(rows, n, dst_rows, alpha, src, lds, dst, ldd);
  return absl::OkStatus();
}

absl::Status Backend::GroupedGemmImpl(std::span<const GemmGroup> groups) {
  cpu::GroupedGemm(groups);
  return absl::OkStatus();
}

// The products go through this backend's Gemm (its own, or the host's where it lacks them).
absl::Status Backend::FalconChunkStepImpl(const FalconChunk<float>& chunk) {
  return cpu::FalconChunkStep(chunk, this);
}

absl::Status Backend::FalconChunkStepImpl(const FalconChunk<double>& chunk) {
  return cpu::FalconChunkStep(chunk, this);
}

absl::Status Backend::ProductKeyScoresImpl(const ProductKeyQuery& query) {
  cpu::ProductKeyScores(query);
  return absl::OkStatus();
}

}  // namespace adaptd::kernels
