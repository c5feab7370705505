// The Backend base class: op names and the portable (CPU) implementations of the operations a
// device backend may leave to the host.
#include "kernels/backend.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/device_name.h"
#include "kernels/op_checks.h"

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

void Backend::SetThreads(int) {}

absl::Status Backend::Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a,
                           int64_t lda, const float* x, float beta, float* y) {
  if (auto s = CheckGemv(trans, m, n, a, lda, x, y); !s.ok()) return s;
  cpu::Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  return absl::OkStatus();
}

absl::Status Backend::Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                           int64_t lda, const double* x, double beta, double* y) {
  if (auto s = CheckGemv(trans, m, n, a, lda, x, y); !s.ok()) return s;
  cpu::Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  return absl::OkStatus();
}

absl::Status Backend::SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a,
                                          int64_t lda, double beta, double* c, int64_t ldc) {
  if (auto s = CheckSyrkAccumulate(n, k, a, lda, c, ldc); !s.ok()) return s;
  cpu::SyrkUpperAccumulate(n, k, alpha, a, lda, beta, c, ldc);
  return absl::OkStatus();
}

absl::Status Backend::TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                           int32_t* idx, float* val) {
  if (auto s = CheckTopK(rows, n, x, ldx, k, idx, val); !s.ok()) return s;
  cpu::TopK(rows, n, x, ldx, k, idx, val);
  return absl::OkStatus();
}

absl::Status Backend::RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                                    const float* src, int64_t lds, float* dst, int64_t ldd,
                                    int64_t dst_count) {
  if (auto s = CheckRowScatterAdd(rows, n, dst_rows, src, lds, dst, ldd, dst_count); !s.ok()) {
    return s;
  }
  cpu::RowScatterAdd(rows, n, dst_rows, alpha, src, lds, dst, ldd);
  return absl::OkStatus();
}

absl::Status Backend::GroupedGemm(std::span<const GemmGroup> groups) {
  if (auto s = CheckGroupedGemm(groups); !s.ok()) return s;
  cpu::GroupedGemm(groups);
  return absl::OkStatus();
}

absl::Status Backend::FalconChunkStep(const FalconChunk<float>& chunk) {
  if (auto s = CheckFalconChunk(chunk); !s.ok()) return s;
  return cpu::FalconChunkStep(chunk, this);
}

absl::Status Backend::FalconChunkStep(const FalconChunk<double>& chunk) {
  if (auto s = CheckFalconChunk(chunk); !s.ok()) return s;
  return cpu::FalconChunkStep(chunk, this);
}

absl::Status Backend::ProductKeyScores(const ProductKeyQuery& query) {
  if (auto s = CheckProductKeyQuery(query); !s.ok()) return s;
  cpu::ProductKeyScores(query);
  return absl::OkStatus();
}

}  // namespace adaptd::kernels
