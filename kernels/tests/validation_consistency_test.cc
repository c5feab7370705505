// The validation layer (backend.h, op_checks.h): the backend under test, the CPU and a
// recording test backend refuse the same bad calls with the same InvalidArgument message,
// which names the argument, and write nothing; no refused call reaches a backend's Impl.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "kernels/tests/consistency_util.h"
#include "kernels/tests/recording_backend.h"

namespace adaptd::kernels {
namespace {

// Memory a bad call may point into, filled with a sentinel that must survive the refusal.
struct Buffers {
  std::vector<double> d = std::vector<double>(64, 7.0);
  std::vector<float> f = std::vector<float>(64, 7.0f);
  std::vector<int32_t> i = std::vector<int32_t>(64, 7);
  bool operator==(const Buffers&) const = default;
};

struct BadCall {
  std::string what;
  std::string message;  // the whole expected message
  std::function<absl::Status(Backend&, Buffers&)> call;
};

constexpr int64_t kBeyondInt = int64_t{1} << 31;

std::vector<BadCall> DenseCalls() {
  const Trans N = Trans::kNo, T = Trans::kYes;
  return {
      {"gemm negative k", "k: negative (-1)",
       [=](Backend& b, Buffers& x) {
         return b.Gemm(N, N, 2, 2, -1, 1.0, x.d.data(), 2, x.d.data(), 2, 0.0, x.d.data(), 2);
       }},
      {"gemm m beyond int", "m: 2147483648 exceeds the 32-bit BLAS limit 2147483647",
       [=](Backend& b, Buffers& x) {
         return b.Gemm(N, N, kBeyondInt, 2, 2, 1.0f, x.f.data(), 2, x.f.data(), 2, 0.0f, x.f.data(),
                       2);
       }},
      {"gemm ldc beyond int", "ldc: 2147483648 exceeds the 32-bit BLAS limit 2147483647",
       [=](Backend& b, Buffers& x) {
         return b.Gemm(N, N, 2, 2, 2, 1.0, x.d.data(), 2, x.d.data(), 2, 0.0, x.d.data(),
                       kBeyondInt);
       }},
      {"gemm lda short", "a: leading dimension 1 is below the row length 2",
       [=](Backend& b, Buffers& x) {
         return b.Gemm(N, N, 2, 2, 2, 1.0f, x.f.data(), 1, x.f.data(), 2, 0.0f, x.f.data(), 2);
       }},
      {"gemm transposed lda short", "a: leading dimension 2 is below the row length 3",
       [=](Backend& b, Buffers& x) {
         // op(A) is 3×2, so A is stored 2×3.
         return b.Gemm(T, N, 3, 2, 2, 1.0, x.d.data(), 2, x.d.data(), 2, 0.0, x.d.data(), 2);
       }},
      {"gemm null b", "b: null pointer",
       [=](Backend& b, Buffers& x) {
         return b.Gemm(N, N, 2, 2, 2, 1.0f, x.f.data(), 2, nullptr, 2, 0.0f, x.f.data(), 2);
       }},
      {"syrk negative n", "n: negative (-2)",
       [](Backend& b, Buffers& x) {
         return b.SyrkUpper(-2, 2, 1.0, x.d.data(), 2, 0.0, x.d.data(), 2);
       }},
      {"syrk ldc short", "c: leading dimension 2 is below the row length 3",
       [](Backend& b, Buffers& x) {
         return b.SyrkUpper(3, 2, 1.0, x.d.data(), 3, 0.0, x.d.data(), 2);
       }},
      {"syrk null a", "a: null pointer",
       [](Backend& b, Buffers& x) {
         return b.SyrkUpper(3, 2, 1.0, nullptr, 3, 0.0, x.d.data(), 3);
       }},
      {"eigen negative n", "n: negative (-1)",
       [](Backend& b, Buffers& x) { return b.SymmetricEigen(-1, x.d.data(), x.d.data()); }},
      {"eigen null w", "w: null pointer",
       [](Backend& b, Buffers& x) { return b.SymmetricEigen(3, x.d.data(), nullptr); }},
      {"cholesky negative m", "m: negative (-1)",
       [](Backend& b, Buffers& x) { return b.CholeskySolve(2, -1, x.d.data(), x.d.data()); }},
      {"cholesky null a", "a: null pointer",
       [](Backend& b, Buffers& x) { return b.CholeskySolve(2, 1, nullptr, x.d.data()); }},
      {"gemv lda short", "a: leading dimension 1 is below the row length 3",
       [=](Backend& b, Buffers& x) {
         return b.Gemv(N, 2, 3, 1.0f, x.f.data(), 1, x.f.data(), 0.0f, x.f.data());
       }},
      {"gemv null x", "x: null pointer",
       [=](Backend& b, Buffers& x) {
         return b.Gemv(T, 2, 3, 1.0, x.d.data(), 3, nullptr, 0.0, x.d.data());
       }},
      {"syrk accumulate negative k", "k: negative (-1)",
       [](Backend& b, Buffers& x) {
         return b.SyrkUpperAccumulate(2, -1, 1.0, x.f.data(), 2, 0.0, x.d.data(), 2);
       }},
      {"syrk accumulate ldc beyond int", "ldc: 2147483648 exceeds the 32-bit BLAS limit 2147483647",
       [](Backend& b, Buffers& x) {
         return b.SyrkUpperAccumulate(2, 2, 1.0, x.f.data(), 2, 0.0, x.d.data(), kBeyondInt);
       }},
  };
}

std::vector<BadCall> SelectCalls() {
  return {
      {"top-k k above n", "k: 5 exceeds the row length n = 4",
       [](Backend& b, Buffers& x) {
         return b.TopK(1, 4, x.f.data(), 4, 5, x.i.data(), x.f.data());
       }},
      {"top-k negative k", "k: negative (-1)",
       [](Backend& b, Buffers& x) {
         return b.TopK(1, 4, x.f.data(), 4, -1, x.i.data(), x.f.data());
       }},
      {"top-k null idx", "idx: null pointer",
       [](Backend& b, Buffers& x) { return b.TopK(2, 4, x.f.data(), 4, 2, nullptr, x.f.data()); }},
      {"scatter index outside", "dst_rows[1] = 3 is outside [0, 3)",
       [](Backend& b, Buffers& x) {
         const int64_t rows[2] = {0, 3};
         return b.RowScatterAdd(2, 2, rows, 1.0f, x.f.data(), 2, x.f.data() + 8, 2, 3);
       }},
      {"scatter null rows", "dst_rows: null pointer",
       [](Backend& b, Buffers& x) {
         return b.RowScatterAdd(2, 2, nullptr, 1.0f, x.f.data(), 2, x.f.data() + 8, 2, 3);
       }},
      {"grouped gemm lda short", "groups[1].a: leading dimension 1 is below the row length 3",
       [](Backend& b, Buffers& x) {
         const GemmGroup ok{1, 1, 1, x.f.data(), 1, x.f.data(), 1, x.f.data() + 16, 1};
         const GemmGroup bad{2, 2, 3, x.f.data(), 1, x.f.data(), 2, x.f.data() + 32, 2};
         const GemmGroup groups[2] = {ok, bad};
         return b.GroupedGemm(groups);
       }},
      {"product keys k above n", "query.k: 9 is outside [1, min(n = 8, 64)]",
       [](Backend& b, Buffers& x) {
         ProductKeyQuery q{1,          2,
                           8,          9,
                           1e-3f,      x.f.data(),
                           4,          {x.f.data(), x.f.data()},
                           x.i.data(), x.f.data() + 32};
         return b.ProductKeyScores(q);
       }},
      {"product keys eps", "query.eps: must be positive",
       [](Backend& b, Buffers& x) {
         ProductKeyQuery q{1,          2,
                           8,          2,
                           0.0f,       x.f.data(),
                           4,          {x.f.data(), x.f.data()},
                           x.i.data(), x.f.data() + 32};
         return b.ProductKeyScores(q);
       }},
      {"product keys null table", "query.tables: null pointer",
       [](Backend& b, Buffers& x) {
         ProductKeyQuery q{
             1, 2, 8, 2, 1e-3f, x.f.data(), 4, {x.f.data(), nullptr}, x.i.data(), x.f.data() + 32};
         return b.ProductKeyScores(q);
       }},
  };
}

// A Falcon chunk of d = 2 keys, m columns, one step, no history, over the double buffer.
template <typename Fn>
absl::Status FalconCall(Backend& b, Buffers& x, int64_t m, int64_t c, int64_t window, Fn&& edit) {
  const std::vector<int64_t> windows(std::max<int64_t>(c, 0), window), cols = {0};
  const std::vector<double> lg = {-0.1}, rate = {0.1};
  const std::vector<FalconColumnGroup> groups = {{cols, lg, rate}};
  FalconChunk<double> chunk;
  chunk.d = 2;
  chunk.m = m;
  chunk.c = c;
  chunk.keys = x.d.data();
  chunk.targets = x.d.data() + 16;
  chunk.window = windows;
  chunk.groups = groups;
  chunk.s = x.d.data() + 32;
  edit(chunk);
  return b.FalconChunkStep(chunk);
}

std::vector<BadCall> FalconCalls() {
  auto none = [](FalconChunk<double>&) {};
  return {
      {"falcon window too long", "chunk.window[0] = 2 is outside [1, 1]",
       [=](Backend& b, Buffers& x) { return FalconCall(b, x, 1, 1, 2, none); }},
      {"falcon column in no group", "chunk.groups: column 1 belongs to no group",
       [=](Backend& b, Buffers& x) { return FalconCall(b, x, 2, 1, 1, none); }},
      {"falcon no step", "chunk: bad shape d=2 m=1 h=0 c=0 (c must be ≥ 1)",
       [=](Backend& b, Buffers& x) { return FalconCall(b, x, 1, 0, 1, none); }},
      {"falcon null keys", "chunk.keys: null pointer",
       [=](Backend& b, Buffers& x) {
         return FalconCall(b, x, 1, 1, 1, [](FalconChunk<double>& c) { c.keys = nullptr; });
       }},
  };
}

TEST_F(ConsistencyTest, EveryBackendRefusesBadCallsAlike) {
  RecordingBackend recording;
  std::vector<BadCall> calls = DenseCalls();
  for (auto more : {SelectCalls(), FalconCalls()})
    calls.insert(calls.end(), more.begin(), more.end());
  for (const BadCall& bad : calls) {
    SCOPED_TRACE(bad.what);
    const Buffers fresh;
    Buffers on_cpu, on_test, on_recording;
    const absl::Status cpu_status = bad.call(cpu(), on_cpu);
    EXPECT_EQ(cpu_status.code(), absl::StatusCode::kInvalidArgument) << cpu_status;
    EXPECT_EQ(cpu_status.message(), bad.message);
    EXPECT_EQ(bad.call(under_test(), on_test), cpu_status) << under_test().name();
    EXPECT_EQ(bad.call(recording, on_recording), cpu_status);
    EXPECT_TRUE(on_cpu == fresh && on_test == fresh && on_recording == fresh)
        << "a refused call wrote to its arguments";
  }
  for (Op op : kAllOps) EXPECT_EQ(recording.impl_calls(op), 0) << OpName(op);
}

// Empty calls succeed without reaching a backend, whatever their pointers.
TEST_F(ConsistencyTest, EmptyCallsSucceedOnEveryBackend) {
  RecordingBackend recording;
  for (Backend* b : {&cpu(), &under_test(), static_cast<Backend*>(&recording)}) {
    SCOPED_TRACE(b->name());
    EXPECT_TRUE(
        b->Gemm(Trans::kNo, Trans::kNo, 0, 3, 2, 1.0, nullptr, 0, nullptr, 0, 0.0, nullptr, 0)
            .ok());
    EXPECT_TRUE(b->SyrkUpper(0, 5, 1.0, nullptr, 0, 0.0, nullptr, 0).ok());
    EXPECT_TRUE(b->SymmetricEigen(0, nullptr, nullptr).ok());
    EXPECT_TRUE(b->CholeskySolve(0, 3, nullptr, nullptr).ok());
    EXPECT_TRUE(b->Gemv(Trans::kNo, 0, 4, 1.0f, nullptr, 0, nullptr, 0.0f, nullptr).ok());
    EXPECT_TRUE(b->SyrkUpperAccumulate(0, 4, 1.0, nullptr, 0, 0.0, nullptr, 0).ok());
    EXPECT_TRUE(b->TopK(0, 4, nullptr, 4, 2, nullptr, nullptr).ok());
    EXPECT_TRUE(b->RowScatterAdd(0, 4, nullptr, 1.0f, nullptr, 4, nullptr, 4, 0).ok());
    EXPECT_TRUE(b->GroupedGemm({}).ok());
    ProductKeyQuery none{0, 2, 8, 2, 1e-3f};
    EXPECT_TRUE(b->ProductKeyScores(none).ok());
  }
  for (Op op : kAllOps) EXPECT_EQ(recording.impl_calls(op), 0) << OpName(op);
}

}  // namespace
}  // namespace adaptd::kernels
