// Concurrent adapt, forget, compile, predict and describe on one store: no crash, versions
// monotonic per reader, each prediction equal to the one published version it names.
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_test_util.h"

namespace adaptd {
namespace {

using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::VectorBatch;

TEST(FaastConcurrencyTest, AdaptCompilePredictInParallel) {
  constexpr int64_t kDim = 16, kM = 3, kQueries = 4;
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::VectorSpec(kM), backend.get());
  std::mt19937_64 rng(123);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 400 * kDim);
  const std::vector<float> targets = faast_test::RandomFloats(rng, 400 * kM);
  const std::vector<float> queries = faast_test::RandomFloats(rng, kQueries * kDim);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, kDim, targets, kM, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());

  absl::Mutex mu;
  std::map<uint64_t, std::shared_ptr<const FaastWeights>> published;  // guarded by mu
  published[1] = store->published();
  std::atomic<bool> writers_done{false};
  std::atomic<int> failures{0};

  auto adapter = [&](int64_t first) {
    for (int t = 0; t < 30; ++t) {
      const int64_t row = first + 6 * (t % 25);
      absl::StatusOr<CommitResult> r = Apply(*store, TxnKind::kAdapt,
                                             {VectorBatch(keys, kDim, targets, kM, row, 3),
                                              VectorBatch(keys, kDim, targets, kM, row + 3, 3)});
      if (!r.ok()) ++failures;
      if (t % 3 == 2) {  // forget what this thread adapted last
        r = Apply(*store, TxnKind::kForget, {VectorBatch(keys, kDim, targets, kM, row, 6)});
        if (!r.ok()) ++failures;
      }
    }
  };
  auto compiler = [&] {
    for (int i = 0; i < 15; ++i) {
      absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
      if (!c.ok()) {
        ++failures;
        continue;
      }
      // The only compiling thread: what is published now is the version just answered.
      std::shared_ptr<const FaastWeights> w = store->published();
      if (w->version != c->version()) ++failures;
      absl::MutexLock lock(&mu);
      published[c->version()] = w;
    }
  };
  struct Seen {
    uint64_t version;
    std::vector<float> out;
  };
  std::vector<std::vector<Seen>> seen(2);
  auto reader = [&](int id) {
    uint64_t last = 0;
    while (!writers_done) {
      absl::StatusOr<Predictions> p = store->Predict(queries.data(), kQueries, kDim, 1);
      if (!p.ok() || p->version < last) ++failures;
      if (p.ok()) {
        last = p->version;
        seen[id].push_back({p->version, p->vectors});
      }
    }
  };
  auto describer = [&] {
    while (!writers_done) {
      adapt::v1::StoreInfo info;
      store->Describe(&info);
      if (!store->Snapshot().ok()) ++failures;
    }
  };

  std::vector<std::thread> readers;
  readers.emplace_back(reader, 0);
  readers.emplace_back(reader, 1);
  readers.emplace_back(describer);
  std::vector<std::thread> writers;
  writers.emplace_back(adapter, 40);
  writers.emplace_back(adapter, 220);
  writers.emplace_back(compiler);
  for (std::thread& t : writers) t.join();
  writers_done = true;
  for (std::thread& t : readers) t.join();

  EXPECT_EQ(failures.load(), 0);
  size_t checked = 0;
  for (const std::vector<Seen>& list : seen) {
    for (const Seen& s : list) {
      auto it = published.find(s.version);
      ASSERT_NE(it, published.end()) << s.version;
      // Predict scores with the float32 copy of the version's S (faast_weights.h): the same
      // product here gives the same bits.
      const FaastWeights& w = *it->second;
      ASSERT_TRUE(w.float_scoring);
      const std::vector<float> s32(w.s.begin(), w.s.end());
      std::vector<float> want(kQueries * w.columns);
      ASSERT_TRUE(backend
                      ->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, kQueries, w.columns, w.dim,
                             1.0f, queries.data(), w.dim, s32.data(), w.columns, 0.0f, want.data(),
                             w.columns)
                      .ok());
      ASSERT_EQ(s.out, want) << "version " << s.version;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.examples(), 40u + 2 * 30 * 6 - 2 * 10 * 6);
  EXPECT_EQ(info.version(), 16u);
}

}  // namespace
}  // namespace adaptd
