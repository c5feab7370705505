// The CUDA backend: validates arguments, takes the device lock and runs the op in cuda_ops.h.
// Thread safety: callable from several threads; calls on one device run one after another
// (CudaResources::mu()), each synchronous: host memory is handed back only when the device is
// done with it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/cuda/falcon_chunk_kernels.h"
#include "kernels/op_checks.h"

namespace adaptd::kernels {
namespace {

using gpu::CudaResources;

// cuBLAS and cuSOLVER's classic entry points take int dimensions.
absl::Status CheckDims(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative matrix dimension: ", d));
    if (d > std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("matrix dimension ", d, " exceeds the CUDA backend's 32-bit limit"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLeadingDim(const char* name, int64_t ld, int64_t row_length) {
  if (ld < row_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("leading dimension ", name, "=", ld, " is below the row length ", row_length));
  }
  return absl::OkStatus();
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaResources> resources)
      : resources_(std::move(resources)) {}

  std::string_view name() const override { return "cuda"; }
  // Every op runs here; Falcon chunks longer than gpu::kFalconMaxSteps steps go to the host
  // implementation, whose products still run here (Gemm).
  bool Supports(Op) const override { return true; }

  absl::Status Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                    double* c, int64_t ldc) override {
    return GemmImpl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  absl::Status Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) override {
    return GemmImpl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  absl::Status SyrkUpper(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                         double beta, double* c, int64_t ldc) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({n, k}));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckLeadingDim("lda", lda, k > 0 ? n : 0));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckLeadingDim("ldc", ldc, n));
    if (n == 0) return absl::OkStatus();
    return OnDevice([&](CudaResources& r) {
      return gpu::SyrkUpperOnDevice(r, n, k, alpha, a, lda, beta, c, ldc);
    });
  }

  absl::Status SymmetricEigen(int64_t n, double* a, double* w) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({n}));
    if (n == 0) return absl::OkStatus();
    return OnDevice([&](CudaResources& r) { return gpu::SymmetricEigenOnDevice(r, n, a, w); });
  }

  absl::Status CholeskySolve(int64_t n, int64_t m, double* a, double* b) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({n, m}));
    if (n == 0) return absl::OkStatus();
    return OnDevice([&](CudaResources& r) { return gpu::CholeskySolveOnDevice(r, n, m, a, b); });
  }

  absl::Status Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
                    const float* x, float beta, float* y) override {
    return GemvImpl(trans, m, n, alpha, a, lda, x, beta, y);
  }
  absl::Status Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
                    const double* x, double beta, double* y) override {
    return GemvImpl(trans, m, n, alpha, a, lda, x, beta, y);
  }

  absl::Status SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a, int64_t lda,
                                   double beta, double* c, int64_t ldc) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckSyrkAccumulate(n, k, a, lda, c, ldc));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({n, k}));
    // Without products only beta scales C: the host does that exactly.
    if (n == 0 || k == 0 || alpha == 0) {
      return Backend::SyrkUpperAccumulate(n, k, alpha, a, lda, beta, c, ldc);
    }
    return OnDevice([&](CudaResources& r) {
      return gpu::SyrkUpperAccumulateOnDevice(r, n, k, alpha, a, lda, beta, c, ldc);
    });
  }

  // k above gpu::kCudaTopKMaxK runs on the host.
  absl::Status TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx,
                    float* val) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckTopK(rows, n, x, ldx, k, idx, val));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({rows, n}));
    if (rows == 0 || k == 0) return absl::OkStatus();
    if (k > gpu::kCudaTopKMaxK) return Backend::TopK(rows, n, x, ldx, k, idx, val);
    return OnDevice(
        [&](CudaResources& r) { return gpu::TopKOnDevice(r, rows, n, x, ldx, k, idx, val); });
  }

  absl::Status RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                             const float* src, int64_t lds, float* dst, int64_t ldd,
                             int64_t dst_count) override {
    CUDA_KERNELS_RETURN_IF_ERROR(
        CheckRowScatterAdd(rows, n, dst_rows, src, lds, dst, ldd, dst_count));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({rows, n, dst_count, rows * n, dst_count * n}));
    if (rows == 0 || n == 0) return absl::OkStatus();
    return OnDevice([&](CudaResources& r) {
      return gpu::RowScatterAddOnDevice(r, rows, n, dst_rows, alpha, src, lds, dst, ldd, dst_count);
    });
  }

  absl::Status GroupedGemm(std::span<const GemmGroup> groups) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckGroupedGemm(groups));
    for (const GemmGroup& g : groups) {
      CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({g.m, g.n, g.k}));
    }
    return OnDevice([&](CudaResources& r) { return gpu::GroupedGemmOnDevice(r, groups); });
  }

  static_assert(kProductKeyMaxK <= gpu::kCudaTopKMaxK, "the top-k kernel must cover every k");
  absl::Status ProductKeyScores(const ProductKeyQuery& query) override {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckProductKeyQuery(query));
    if (query.count == 0) return absl::OkStatus();
    CUDA_KERNELS_RETURN_IF_ERROR(
        CheckDims({query.count * 2, query.count * 2 * int64_t{query.half}}));
    return OnDevice([&](CudaResources& r) { return gpu::ProductKeyScoresOnDevice(r, query); });
  }

  absl::Status FalconChunkStep(const FalconChunk<float>& chunk) override {
    return FalconChunkStepImpl(chunk);
  }
  absl::Status FalconChunkStep(const FalconChunk<double>& chunk) override {
    return FalconChunkStepImpl(chunk);
  }

 private:
  template <typename T>
  absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, T alpha, const T* a, int64_t lda,
                        const T* x, T beta, T* y) {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckGemv(trans, m, n, a, lda, x, y));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({m, n}));
    // An empty op(A) only scales y (or leaves nothing to do): the host does that exactly.
    if (m == 0 || n == 0) return Backend::Gemv(trans, m, n, alpha, a, lda, x, beta, y);
    return OnDevice([&](CudaResources& r) {
      return gpu::GemvOnDevice<T>(r, trans, m, n, alpha, a, lda, x, beta, y);
    });
  }

  template <typename T>
  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                        int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({m, n, k}));
    if (m == 0 || n == 0) return absl::OkStatus();
    CUDA_KERNELS_RETURN_IF_ERROR(
        CheckLeadingDim("lda", lda, k == 0 ? 0 : (ta == Trans::kNo ? k : m)));
    CUDA_KERNELS_RETURN_IF_ERROR(
        CheckLeadingDim("ldb", ldb, k == 0 ? 0 : (tb == Trans::kNo ? n : k)));
    CUDA_KERNELS_RETURN_IF_ERROR(CheckLeadingDim("ldc", ldc, n));
    return OnDevice([&](CudaResources& r) {
      return gpu::GemmOnDevice<T>(r, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  }

  template <typename T>
  absl::Status FalconChunkStepImpl(const FalconChunk<T>& chunk) {
    CUDA_KERNELS_RETURN_IF_ERROR(CheckFalconChunk(chunk));
    if (chunk.m == 0) return absl::OkStatus();
    // The kernels hold c per-step factors in shared memory.
    if (chunk.c > gpu::kFalconMaxSteps) return Backend::FalconChunkStep(chunk);
    int64_t pairs = 0;
    for (int64_t w : chunk.window) pairs += w;
    CUDA_KERNELS_RETURN_IF_ERROR(CheckDims({chunk.d, chunk.m, chunk.h + chunk.c, pairs}));
    return OnDevice([&](CudaResources& r) { return gpu::FalconChunkStepOnDevice<T>(r, chunk); });
  }

  // Runs `op` under the device lock with the device current, then waits for the stream even when
  // `op` failed part-way, so that no queued copy touches the caller's memory after return.
  template <typename Fn>
  absl::Status OnDevice(Fn op) {
    CudaResources& r = *resources_;
    absl::MutexLock lock(&r.mu());
    gpu::ScopedDevice scope(r.device());
    CUDA_KERNELS_RETURN_IF_ERROR(scope.status());
    absl::Status status = op(r);
    absl::Status synced = r.Synchronize();
    return status.ok() ? synced : status;
  }

  const std::shared_ptr<CudaResources> resources_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  if (device < 0) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA device index ", device, " is negative"));
  }
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // No driver, no device, or a driver too old for this runtime: the build can run, the
    // backend cannot. Clear the error so later runtime calls do not see it.
    (void)cudaGetLastError();
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device: cudaGetDeviceCount: ", cudaGetErrorName(error), " (",
                     cudaGetErrorString(error), ")"));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device is present");
  if (device >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device index ", device, " is out of range: ", count, " device(s) present"));
  }
  absl::StatusOr<std::shared_ptr<CudaResources>> resources = CudaResources::ForDevice(device);
  if (!resources.ok()) return resources.status();
  return std::make_unique<CudaBackend>(*std::move(resources));
}

}  // namespace adaptd::kernels
