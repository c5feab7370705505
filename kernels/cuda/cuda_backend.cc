// The CUDA backend: the Impls of backend.h, each taking the device lock and running the op in
// cuda_ops.h. Arguments arrive validated and non-empty (Backend's public methods); extents are
// within int wherever SupportsImpl says the call runs here.
// Thread safety: callable from several threads; calls on one device run one after another
// (CudaResources::mu()), each synchronous: host memory is handed back only when the device is
// done with it.
#include <cuda_runtime_api.h>

#include <cstdint>
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

namespace adaptd::kernels {
namespace {

using gpu::CudaResources;

// cuBLAS, cuSOLVER and the own kernels index with int.
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
// The product-key kernel puts a query's sub-keys on the grid's y axis, 128 per block.
constexpr int64_t kMaxProductKeySubKeys = int64_t{65535} * 128;

static_assert(kProductKeyMaxK <= gpu::kCudaTopKMaxK, "the top-k kernel must cover every k");

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaResources> resources)
      : resources_(std::move(resources)) {}

  std::string_view name() const override { return "cuda"; }

 protected:
  // Every op runs here within int extents, except top-k above gpu::kCudaTopKMaxK and Falcon
  // chunks of more than gpu::kFalconMaxSteps steps (the kernels hold c per-step factors in
  // shared memory): those the public methods run on the host.
  bool SupportsImpl(const OpCall& call) const override {
    if (call.extent > kIntMax) return false;
    switch (call.op) {
      case Op::kTopK:
        return call.k <= gpu::kCudaTopKMaxK;
      case Op::kFalconChunkStep:
        return call.steps <= gpu::kFalconMaxSteps;
      case Op::kProductKeyScores:
        return call.n <= kMaxProductKeySubKeys && call.k <= gpu::kCudaTopKMaxK;
      default:
        return true;
    }
  }

  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                        const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                        double* c, int64_t ldc) override {
    return OnDevice([&](CudaResources& r) {
      return gpu::GemmOnDevice<double>(r, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  }

  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc) override {
    return OnDevice([&](CudaResources& r) {
      return gpu::GemmOnDevice<float>(r, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  }

  absl::Status SyrkUpperImpl(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                             double beta, double* c, int64_t ldc) override {
    return OnDevice([&](CudaResources& r) {
      return gpu::SyrkUpperOnDevice(r, n, k, alpha, a, lda, beta, c, ldc);
    });
  }

  absl::Status SymmetricEigenImpl(int64_t n, double* a, double* w) override {
    return OnDevice([&](CudaResources& r) { return gpu::SymmetricEigenOnDevice(r, n, a, w); });
  }

  absl::Status CholeskySolveImpl(int64_t n, int64_t m, double* a, double* b) override {
    return OnDevice([&](CudaResources& r) { return gpu::CholeskySolveOnDevice(r, n, m, a, b); });
  }

  absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
                        const float* x, float beta, float* y) override {
    return GemvOn(trans, m, n, alpha, a, lda, x, beta, y);
  }
  absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                        int64_t lda, const double* x, double beta, double* y) override {
    return GemvOn(trans, m, n, alpha, a, lda, x, beta, y);
  }

  absl::Status SyrkUpperAccumulateImpl(int64_t n, int64_t k, double alpha, const float* a,
                                       int64_t lda, double beta, double* c, int64_t ldc) override {
    // Without products only beta scales C: the host does that exactly.
    if (k == 0 || alpha == 0) {
      return Backend::SyrkUpperAccumulateImpl(n, k, alpha, a, lda, beta, c, ldc);
    }
    return OnDevice([&](CudaResources& r) {
      return gpu::SyrkUpperAccumulateOnDevice(r, n, k, alpha, a, lda, beta, c, ldc);
    });
  }

  absl::Status TopKImpl(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx,
                        float* val) override {
    return OnDevice(
        [&](CudaResources& r) { return gpu::TopKOnDevice(r, rows, n, x, ldx, k, idx, val); });
  }

  absl::Status RowScatterAddImpl(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                                 const float* src, int64_t lds, float* dst, int64_t ldd,
                                 int64_t dst_count) override {
    return OnDevice([&](CudaResources& r) {
      return gpu::RowScatterAddOnDevice(r, rows, n, dst_rows, alpha, src, lds, dst, ldd, dst_count);
    });
  }

  absl::Status GroupedGemmImpl(std::span<const GemmGroup> groups) override {
    return OnDevice([&](CudaResources& r) { return gpu::GroupedGemmOnDevice(r, groups); });
  }

  absl::Status ProductKeyScoresImpl(const ProductKeyQuery& query) override {
    return OnDevice([&](CudaResources& r) { return gpu::ProductKeyScoresOnDevice(r, query); });
  }

  absl::Status FalconChunkStepImpl(const FalconChunk<float>& chunk) override {
    return OnDevice(
        [&](CudaResources& r) { return gpu::FalconChunkStepOnDevice<float>(r, chunk); });
  }
  absl::Status FalconChunkStepImpl(const FalconChunk<double>& chunk) override {
    return OnDevice(
        [&](CudaResources& r) { return gpu::FalconChunkStepOnDevice<double>(r, chunk); });
  }

 private:
  template <typename T>
  absl::Status GemvOn(Trans trans, int64_t m, int64_t n, T alpha, const T* a, int64_t lda,
                      const T* x, T beta, T* y) {
    // An empty op(A) only scales y: the host does that exactly.
    if (m == 0 || n == 0) return Backend::GemvImpl(trans, m, n, alpha, a, lda, x, beta, y);
    return OnDevice([&](CudaResources& r) {
      return gpu::GemvOnDevice<T>(r, trans, m, n, alpha, a, lda, x, beta, y);
    });
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
