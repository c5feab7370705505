// RecordingBackend, for tests: a Backend that runs every call that reaches it on the host
// backend (HostBackend(), the CPU), counts per op the calls that reach its Impls, and reports
// the ops it is told to as unsupported, so a test can see where Backend's public methods send
// a call (this backend, or the host fallback) and that a refused call reaches no Impl.
// Thread safety: the counters are atomic; SetSupported must not race with calls.
#ifndef ADAPTD_KERNELS_TESTS_RECORDING_BACKEND_H_
#define ADAPTD_KERNELS_TESTS_RECORDING_BACKEND_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/backend.h"

namespace adaptd::kernels {

class RecordingBackend final : public Backend {
 public:
  static constexpr size_t kOps = sizeof(kAllOps) / sizeof(kAllOps[0]);

  RecordingBackend() {
    for (bool& s : supported_) s = true;
  }

  std::string_view name() const override { return "recording"; }

  void SetSupported(Op op, bool supported) { supported_[Index(op)] = supported; }
  // Calls of `op` that reached this backend's Impls.
  int64_t impl_calls(Op op) const { return calls_[Index(op)].load(); }

 protected:
  bool SupportsImpl(const OpCall& call) const override { return supported_[Index(call.op)]; }

  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                        const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                        double* c, int64_t ldc) override {
    Count(Op::kGemm);
    return HostBackend().Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc) override {
    Count(Op::kGemm);
    return HostBackend().Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  absl::Status SyrkUpperImpl(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                             double beta, double* c, int64_t ldc) override {
    Count(Op::kSyrk);
    return HostBackend().SyrkUpper(n, k, alpha, a, lda, beta, c, ldc);
  }
  absl::Status SymmetricEigenImpl(int64_t n, double* a, double* w) override {
    Count(Op::kSymmetricEigen);
    return HostBackend().SymmetricEigen(n, a, w);
  }
  absl::Status CholeskySolveImpl(int64_t n, int64_t m, double* a, double* b) override {
    Count(Op::kCholeskySolve);
    return HostBackend().CholeskySolve(n, m, a, b);
  }
  absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
                        const float* x, float beta, float* y) override {
    Count(Op::kGemv);
    return HostBackend().Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  }
  absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                        int64_t lda, const double* x, double beta, double* y) override {
    Count(Op::kGemv);
    return HostBackend().Gemv(trans, m, n, alpha, a, lda, x, beta, y);
  }
  absl::Status SyrkUpperAccumulateImpl(int64_t n, int64_t k, double alpha, const float* a,
                                       int64_t lda, double beta, double* c, int64_t ldc) override {
    Count(Op::kSyrkAccumulate);
    return HostBackend().SyrkUpperAccumulate(n, k, alpha, a, lda, beta, c, ldc);
  }
  absl::Status TopKImpl(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx,
                        float* val) override {
    Count(Op::kTopK);
    return HostBackend().TopK(rows, n, x, ldx, k, idx, val);
  }
  absl::Status RowScatterAddImpl(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                                 const float* src, int64_t lds, float* dst, int64_t ldd,
                                 int64_t dst_count) override {
    Count(Op::kRowScatterAdd);
    return HostBackend().RowScatterAdd(rows, n, dst_rows, alpha, src, lds, dst, ldd, dst_count);
  }
  absl::Status GroupedGemmImpl(std::span<const GemmGroup> groups) override {
    Count(Op::kGroupedGemm);
    return HostBackend().GroupedGemm(groups);
  }
  absl::Status FalconChunkStepImpl(const FalconChunk<float>& chunk) override {
    Count(Op::kFalconChunkStep);
    return HostBackend().FalconChunkStep(chunk);
  }
  absl::Status FalconChunkStepImpl(const FalconChunk<double>& chunk) override {
    Count(Op::kFalconChunkStep);
    return HostBackend().FalconChunkStep(chunk);
  }
  absl::Status ProductKeyScoresImpl(const ProductKeyQuery& query) override {
    Count(Op::kProductKeyScores);
    return HostBackend().ProductKeyScores(query);
  }

 private:
  static size_t Index(Op op) { return static_cast<size_t>(op); }
  void Count(Op op) { calls_[Index(op)].fetch_add(1); }

  std::array<bool, kOps> supported_;
  std::array<std::atomic<int64_t>, kOps> calls_{};
};

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_TESTS_RECORDING_BACKEND_H_
