// The compute backend: the dense linear algebra that stores and encoders run. One interface,
// a CPU implementation (OpenBLAS + LAPACKE) and a CUDA one (cuBLAS + cuSOLVER).
//
// Layout: every matrix is row-major with an explicit leading dimension (elements between the
// starts of two rows). Pointers are host memory; a device backend stages them itself.
// Thread safety: a Backend may be called from several threads at once unless its
// documentation says otherwise; the checks and the dispatch (Backend below) are stateless.
#ifndef ADAPTD_KERNELS_BACKEND_H_
#define ADAPTD_KERNELS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd::kernels {

enum class Op {
  kGemm,
  kSyrk,
  kSymmetricEigen,
  kCholeskySolve,
  kGemv,
  kSyrkAccumulate,
  kTopK,
  kRowScatterAdd,
  kGroupedGemm,
  kFalconChunkStep,
  kProductKeyScores,
};

// Every Op, for capability listings and tests.
inline constexpr Op kAllOps[] = {
    Op::kGemm,
    Op::kSyrk,
    Op::kSymmetricEigen,
    Op::kCholeskySolve,
    Op::kGemv,
    Op::kSyrkAccumulate,
    Op::kTopK,
    Op::kRowScatterAdd,
    Op::kGroupedGemm,
    Op::kFalconChunkStep,
    Op::kProductKeyScores,
};
std::string_view OpName(Op op);

enum class Trans { kNo, kYes };

// One product of GroupedGemm: C (m×n) = A (m×k, input rows) · B (k×n, the group's weights).
struct GemmGroup {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
};

// One group of output columns of a Falcon chunk step that share a step size β: the columns'
// indices and, per step t of the chunk, log γ_t and the rate η_t / B_t.
struct FalconColumnGroup {
  std::span<const int64_t> columns;
  std::span<const double> log_gamma;  // c entries
  std::span<const double> rate;       // c entries
};

// One chunk of C pairs of the chunk-parallel Falcon update (server/stores/falcon_chunked.h
// states the mathematics). `keys` ((h + c) × d) and `targets` ((h + c) × m) hold the h history
// pairs, then the chunk's c pairs; `window[t]` (c entries, 1 ≤ window[t] ≤ h + t + 1) is the
// number of pairs in step t's window, its own pair last. `s` (d × m) is updated in place;
// `predictions` (c × m, may be null) receives S_{t−1}ᵀx_t. `residual` selects variants 1/2/3
// (forward substitution on the residuals) over 1A/2A/3A (the masked form). Every column
// belongs to exactly one group. On error `s` may be partly updated: callers work on a copy.
template <typename T>
struct FalconChunk {
  int64_t d = 0, m = 0, h = 0, c = 0;
  const T* keys = nullptr;
  const T* targets = nullptr;
  std::span<const int64_t> window;
  bool residual = true;
  std::span<const FalconColumnGroup> groups;
  T* s = nullptr;
  T* predictions = nullptr;
};

// Product-key scoring (FwPKM addressing): `count` queries of 2·half floats (row-major, leading
// dimension ldq ≥ 2·half) against two codebooks of n sub-keys, each stored dimension-major
// (tables[h][c·n + i] = coordinate c of sub-key i of half h). For every query and half, the k
// sub-keys of best IDW score s = −log(ε + ‖q_half − K_i‖²), best first, ties to the smaller
// sub-key; written to idx / score at [(t·2 + half)·k + r]. 1 ≤ k ≤ min(n, kProductKeyMaxK).
inline constexpr int kProductKeyMaxK = 64;
struct ProductKeyQuery {
  int64_t count = 0;
  int half = 0, n = 0, k = 0;
  float eps = 0;
  const float* q = nullptr;
  int64_t ldq = 0;
  const float* tables[2] = {nullptr, nullptr};
  int32_t* idx = nullptr;
  float* score = nullptr;
};

class Backend;
Backend& HostBackend();  // below

// One call as Supports sees it: the op and the sizes of the call that bound where it can run.
// Backend's public methods fill it from their (validated) arguments; a field an op does not
// have stays 0, so OpCall{op} asks about the op's small calls.
struct OpCall {
  Op op = Op::kGemm;
  int64_t extent = 0;  // the largest dimension or element count the call indexes
  int64_t n = 0;       // kTopK, kProductKeyScores: candidates per row (n)
  int64_t k = 0;       // kTopK, kProductKeyScores: entries selected per row (k)
  int64_t steps = 0;   // kFalconChunkStep: the chunk's steps (c)
};

// The interface in the manner of faiss: every operation is a public non-virtual method that
// validates its arguments (op_checks.h: the same checks and messages for every backend, with
// InvalidArgument naming the argument, nothing written on refusal), answers empty calls
// itself, then runs the call on this backend when Supports says it can, or else on
// HostBackend(), through the protected `...Impl` virtuals a backend implements. So every
// backend refuses the same calls with the same status, and Supports is, by construction, the
// rule that decides where a call runs. Impls see only validated, non-empty calls (each Impl
// comment says what "non-empty" means for it).
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  // Whether every call runs on the host CPU (the CPU backend): a call that passes its checks
  // then cannot fail, so a caller may run it on state it cannot restore.
  virtual bool RunsOnHost() const { return false; }

  // Whether this backend runs `call` itself. A call it does not support still succeeds: the
  // public method runs it on HostBackend() (the CPU), whose result it then is.
  bool Supports(const OpCall& call) const { return SupportsImpl(call); }
  // Whether it runs `op` itself for small calls (OpCall{op}).
  bool Supports(Op op) const { return SupportsImpl(OpCall{op}); }

  // Threads the backend may use on the host for one call (OpenBLAS's count, process-wide, and
  // the CPU loops'); ≤ 0 leaves it. Device backends ignore it.
  virtual void SetThreads(int threads);

  // C (m×n) = alpha·op(A)·op(B) + beta·C, with op(A) m×k and op(B) k×n. Dimensions and
  // leading dimensions must fit BLAS's 32-bit integers on every backend.
  absl::Status Gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                    double* c, int64_t ldc);
  absl::Status Gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc);

  // The upper triangle of C (n×n) = alpha·AᵀA + beta·C, with A k×n (k rows of n features).
  // The strictly lower triangle of C is not referenced.
  absl::Status SyrkUpper(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                         double beta, double* c, int64_t ldc);

  // Eigendecomposition of the symmetric n×n matrix A (upper triangle read). On return `a`
  // holds the orthonormal eigenvectors as columns (a[i·n + j] is entry i of vector j) and
  // `w` the n eigenvalues in ascending order.
  absl::Status SymmetricEigen(int64_t n, double* a, double* w);

  // Solves A X = B for a symmetric positive definite A (n×n, upper triangle read; overwritten
  // by its Cholesky factor) and B (n×m, overwritten by X). FailedPrecondition when A is not
  // positive definite.
  absl::Status CholeskySolve(int64_t n, int64_t m, double* a, double* b);

  // y = alpha·op(A)·x + beta·y with A m×n (leading dimension lda); x and y contiguous, of
  // length n and m (kNo) or m and n (kYes). beta = 0 ignores y's old contents (NaN included).
  absl::Status Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
                    const float* x, float beta, float* y);
  absl::Status Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
                    const double* x, double beta, double* y);

  // The upper triangle of C (n×n) = alpha·AᵀA + beta·C with A k×n in float and C in float64:
  // every product is formed and summed in float64 (a float product is exact in float64), so
  // the result equals SyrkUpper on A converted to double. The lower triangle is not referenced.
  absl::Status SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a, int64_t lda,
                                   double beta, double* c, int64_t ldc);

  // Per row of x (rows×n, leading dimension ldx), the k largest entries, best first, ties to
  // the lower index; NaN ranks below every number. idx and val are rows×k (contiguous).
  // InvalidArgument when k > n or k < 0; k = 0 writes nothing.
  absl::Status TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx,
                    float* val);

  // dst[dst_rows[r]] += alpha·src[r] for r < rows (rows of n floats; src leading dimension lds,
  // dst leading dimension ldd, dst holding dst_count rows). Rows may repeat: all are summed, in
  // an order that is unspecified on device backends. InvalidArgument (nothing written) when an
  // index is outside [0, dst_count).
  absl::Status RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                             const float* src, int64_t lds, float* dst, int64_t ldd,
                             int64_t dst_count);

  // C_g = A_g·B_g for every group (GemmGroup): one call for many small products with their own
  // weights, the segmented gather-multiply of multi-adapter serving. C_g is overwritten; groups
  // must not write overlapping memory. Groups with m, n = 0 are skipped; k = 0 writes zeros.
  absl::Status GroupedGemm(std::span<const GemmGroup> groups);

  // One chunk of the chunk-parallel Falcon update (FalconChunk above).
  absl::Status FalconChunkStep(const FalconChunk<float>& chunk);
  absl::Status FalconChunkStep(const FalconChunk<double>& chunk);

  // Product-key scoring with per-half top-k (ProductKeyQuery above). On the CPU the scores are
  // bit-identical to scoring each query alone with the exact per-coordinate distance loop.
  absl::Status ProductKeyScores(const ProductKeyQuery& query);

 protected:
  // Whether this backend runs `call` itself (Supports).
  virtual bool SupportsImpl(const OpCall& call) const = 0;

  // m, n ≥ 1 (k may be 0: C is then scaled by beta).
  virtual absl::Status GemmImpl(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k,
                                double alpha, const double* a, int64_t lda, const double* b,
                                int64_t ldb, double beta, double* c, int64_t ldc) = 0;
  virtual absl::Status GemmImpl(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* a, int64_t lda, const float* b,
                                int64_t ldb, float beta, float* c, int64_t ldc) = 0;
  // n ≥ 1.
  virtual absl::Status SyrkUpperImpl(int64_t n, int64_t k, double alpha, const double* a,
                                     int64_t lda, double beta, double* c, int64_t ldc) = 0;
  // n ≥ 1.
  virtual absl::Status SymmetricEigenImpl(int64_t n, double* a, double* w) = 0;
  // n ≥ 1.
  virtual absl::Status CholeskySolveImpl(int64_t n, int64_t m, double* a, double* b) = 0;

  // The operations below have host implementations here (the CPU backend's, kernels/cpu/),
  // which a device backend overrides where it runs the op itself.
  // y non-empty (m ≥ 1 for kNo, n ≥ 1 for kYes).
  virtual absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, float alpha, const float* a,
                                int64_t lda, const float* x, float beta, float* y);
  virtual absl::Status GemvImpl(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                                int64_t lda, const double* x, double beta, double* y);
  // n ≥ 1.
  virtual absl::Status SyrkUpperAccumulateImpl(int64_t n, int64_t k, double alpha, const float* a,
                                               int64_t lda, double beta, double* c, int64_t ldc);
  // rows ≥ 1, 1 ≤ k ≤ n.
  virtual absl::Status TopKImpl(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                                int32_t* idx, float* val);
  // rows, n ≥ 1; every index checked against dst_count.
  virtual absl::Status RowScatterAddImpl(int64_t rows, int64_t n, const int64_t* dst_rows,
                                         float alpha, const float* src, int64_t lds, float* dst,
                                         int64_t ldd, int64_t dst_count);
  // At least one group with m, n ≥ 1.
  virtual absl::Status GroupedGemmImpl(std::span<const GemmGroup> groups);
  // m ≥ 1.
  virtual absl::Status FalconChunkStepImpl(const FalconChunk<float>& chunk);
  virtual absl::Status FalconChunkStepImpl(const FalconChunk<double>& chunk);
  // count ≥ 1.
  virtual absl::Status ProductKeyScoresImpl(const ProductKeyQuery& query);

 private:
  // This backend when it supports `call`, else HostBackend().
  Backend& RunnerFor(const OpCall& call) { return SupportsImpl(call) ? *this : HostBackend(); }
  template <typename T>
  absl::Status GemmChecked(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                           const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                           int64_t ldc);
  template <typename T>
  absl::Status GemvChecked(Trans trans, int64_t m, int64_t n, T alpha, const T* a, int64_t lda,
                           const T* x, T beta, T* y);
  template <typename T>
  absl::Status FalconChunkStepChecked(const FalconChunk<T>& chunk);
};

// The process's shared CPU backend, where every backend's unsupported calls run (and what code
// without a configured backend uses). Never destroyed; callable from any thread.
Backend& HostBackend();

// The CPU backend. `threads` > 0 sets OpenBLAS's thread count (process-wide); 0 leaves it.
std::unique_ptr<Backend> MakeCpuBackend(int threads = 0);

// The CUDA backend on `device`. Unavailable when the build has no CUDA or no device is present.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

// The backend a device name chooses (kernels/device_name.h: "cpu" or empty, "cuda",
// "cuda:N"). InvalidArgument for a malformed name; FailedPrecondition, with a one-line message
// that names the device and the reason, when CUDA is asked for and cannot be used.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(std::string_view device);

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_BACKEND_H_
