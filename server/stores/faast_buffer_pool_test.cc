// FaastBufferPool: buffers come back by size, and the idle ones stay within the bound.
#include "server/stores/faast_buffer_pool.h"

#include <vector>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

TEST(FaastBufferPoolTest, ReusesABufferOfTheSameSize) {
  FaastBufferPool pool(1 << 20);
  std::vector<double> a = pool.Take(100);
  ASSERT_EQ(a.size(), 100u);
  const double* data = a.data();
  pool.Give(std::move(a));
  EXPECT_EQ(pool.idle_bytes(), 100 * sizeof(double));
  EXPECT_EQ(pool.Take(50).size(), 50u);  // another size: a fresh buffer
  std::vector<double> b = pool.Take(100);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(FaastBufferPoolTest, IdleBuffersStayWithinTheBound) {
  constexpr size_t kBound = 1000 * sizeof(double);
  FaastBufferPool pool(kBound);
  pool.Give(std::vector<double>(2000));  // larger than the bound: freed
  EXPECT_EQ(pool.idle_bytes(), 0u);
  std::vector<double> first(400), second(400), third(400);
  const double* second_data = second.data();
  pool.Give(std::move(first));
  pool.Give(std::move(second));
  pool.Give(std::move(third));  // the oldest (first) makes room
  EXPECT_EQ(pool.idle_bytes(), 800 * sizeof(double));
  pool.Take(400);
  EXPECT_EQ(pool.Take(400).data(), second_data);
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(FaastBufferPoolTest, ClearFreesEveryIdleBuffer) {
  FaastBufferPool pool(1000 * sizeof(double));
  pool.Give(std::vector<double>(100));
  pool.Give(std::vector<double>(200));
  EXPECT_EQ(pool.idle_bytes(), 300 * sizeof(double));
  pool.Clear();
  EXPECT_EQ(pool.idle_bytes(), 0u);
  EXPECT_EQ(pool.Take(100).size(), 100u);  // allocated afresh
}

}  // namespace
}  // namespace adaptd
