// StoreSlot: a cold slot loads on its first Get, once for concurrent callers; a failed load
// answers every waiter, leaves the slot cold, and the next Get tries again; describing a cold
// slot never loads it.
#include "server/core/store_slot.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

std::shared_ptr<Store> MakeStore() {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_dim(4);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  static auto* backend = kernels::MakeCpuBackend(1).release();
  return CreateStore(spec, backend).value();
}

adapt::v1::StoreInfo ColdInfo() {
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_dim(4);
  info.set_examples(7);
  info.set_memory_bytes(1234);
  return info;
}

TEST(StoreSlotTest, ConcurrentFirstCallsLoadOnce) {
  std::atomic<int> loads{0};
  absl::Notification release;
  const std::shared_ptr<Store> store = MakeStore();
  StoreSlot slot("t", "s", ColdInfo(), [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
    ++loads;
    release.WaitForNotification();  // hold the load until every caller is waiting
    return store;
  });
  std::vector<std::thread> callers;
  std::atomic<int> got{0};
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      auto s = slot.Get();
      if (s.ok() && s->get() == store.get()) ++got;
    });
  }
  while (loads.load() == 0) std::this_thread::yield();
  release.Notify();
  for (auto& t : callers) t.join();
  EXPECT_EQ(loads.load(), 1);
  EXPECT_EQ(got.load(), 8);
  EXPECT_EQ(slot.loaded(), store);
  EXPECT_EQ(slot.Describe().tier(), adapt::v1::TIER_HOT);
}

TEST(StoreSlotTest, AFailedLoadLeavesTheSlotColdAndIsRetried) {
  int loads = 0;
  const std::shared_ptr<Store> store = MakeStore();
  StoreSlot slot("t", "s", ColdInfo(), [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
    if (++loads == 1) return absl::UnavailableError("disk busy");
    return store;
  });
  EXPECT_EQ(slot.Get().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(slot.loaded(), nullptr);
  auto second = slot.Get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->get(), store.get());
  EXPECT_EQ(loads, 2);
}

TEST(StoreSlotTest, DescribingAColdSlotNeverLoadsIt) {
  int loads = 0;
  StoreSlot slot("t", "s", ColdInfo(), [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
    ++loads;
    return MakeStore();
  });
  const adapt::v1::StoreInfo info = slot.Describe();
  EXPECT_EQ(info.tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(info.examples(), 7u);
  EXPECT_EQ(info.memory_bytes(), 0u);  // a cold store holds nothing in memory
  EXPECT_EQ(slot.loaded_bytes(), 1234u);
  EXPECT_EQ(slot.spec().dim(), 4u);
  EXPECT_EQ(loads, 0);
}

}  // namespace
}  // namespace adaptd
