// The onnx encoder's heap settings (onnx_heaps.h): a worker thread's heap hands back the blocks
// of a batch it freed, which glibc's own thresholds kept resident.
#include "server/encoders/onnx/onnx_heaps.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "gtest/gtest.h"
#include "server/encoders/onnx/onnx_test_util.h"

namespace adaptd {
namespace {

using onnx_test::ResidentBytes;

// The blocks of one large batch, made, written and freed by a thread of its own (so in a heap
// of its own), then malloc_trim as after a batch: the resident bytes the thread left behind.
int64_t ResidentLeftByABatchOnAThread() {
  int64_t left = 0;
  std::thread worker([&left] {
    const int64_t before = ResidentBytes();
    static char* volatile block = nullptr;  // volatile: each block is really made and freed
    // With glibc's own thresholds the freed, mapped 30 MiB block raises the mmap threshold,
    // so the 24 MiB one comes from the thread's heap, whose top keeps it (below the risen trim
    // threshold of 60 MiB, and malloc_trim never shrinks a thread heap's top).
    for (size_t size : {size_t{30} << 20, size_t{24} << 20}) {
      block = static_cast<char*>(std::malloc(size));
      std::memset(block, 1, size);
      std::free(block);
    }
    malloc_trim(0);
    left = ResidentBytes() - before;
  });
  worker.join();
  return left;
}

TEST(OnnxHeapsTest, AThreadsHeapHandsBackTheBlocksOfABatchItFreed) {
  EXPECT_EQ(ConfigureHeapsForVaryingShapes(), int64_t{16} << 20);
  EXPECT_LE(ResidentLeftByABatchOnAThread(), int64_t{8} << 20);
}

}  // namespace
}  // namespace adaptd
