// StoreSlot: a cold slot loads on its first Get, once for concurrent callers; a failed load
// answers every waiter, leaves the slot cold, and the next Get tries again; describing a cold
// slot never loads it. The warm tier: a read of a cold slot loads only the warm form, a write
// loads the whole store (reads meanwhile served warm), eviction goes hot → warm → cold.
#include "server/core/store_slot.h"

#include <atomic>
#include <string>
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

kernels::Backend* Backend() {
  static auto* backend = kernels::MakeCpuBackend(1).release();
  return backend;
}

// A warm store of dimension 4 with two labels.
std::shared_ptr<WarmStore> MakeWarm() {
  auto readout = std::make_shared<LinearReadout>();
  readout->version = 3;
  readout->dim = 4;
  readout->columns = 2;
  readout->weights = {1, 0, 0, 1, 0, 0, 0, 0};
  readout->label_names =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"a", "b"});
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_dim(4);
  info.set_examples(7);
  info.set_memory_bytes(1234);
  return std::make_shared<WarmStore>(info, std::move(readout), Backend());
}

std::vector<std::string> Labels(const adapt::v1::StoreInfo& info) {
  return {info.labels().begin(), info.labels().end()};
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

// A slot made at start-up holds its description as stored (serialized): each description
// of the cold slot parses it, and a read that makes it warm keeps it parsed, once.
TEST(StoreSlotTest, AStoredDescriptionIsParsedWhenNeeded) {
  adapt::v1::StoreInfo cold = ColdInfo();
  cold.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  cold.add_labels("a");
  cold.add_labels("b");
  std::shared_ptr<const adapt::v1::StoreInfo> given;
  int loads = 0;
  StoreSlot slot(
      "t", "s", adapt::v1::STORE_KIND_FAAST, cold.SerializeAsString(),
      [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
        ++loads;
        return MakeStore();
      },
      [&](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> {
        given = stored;
        return std::make_shared<WarmStore>(stored, MakeWarm()->Readout(), Backend());
      });
  EXPECT_EQ(slot.kind(), adapt::v1::STORE_KIND_FAAST);
  const adapt::v1::StoreInfo info = slot.Describe();
  EXPECT_EQ(info.tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(info.examples(), 7u);
  EXPECT_EQ(info.memory_bytes(), 0u);
  EXPECT_EQ(Labels(info), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(slot.loaded_bytes(), 1234u);
  EXPECT_EQ(slot.spec().dim(), 4u);
  auto read = slot.GetForRead();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_NE(given, nullptr);
  EXPECT_EQ(given->examples(), 7u);
  EXPECT_EQ(Labels(*given), (std::vector<std::string>{"a", "b"}));
  const auto* warm = dynamic_cast<const WarmStore*>(read->get());
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(warm->info().get(), given.get());
  read = absl::InternalError("released");
  ASSERT_NE(slot.BeginEvict(/*holders=*/0), nullptr);
  slot.FinishEvict(true, adapt::v1::StoreInfo());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(Labels(slot.Describe()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(loads, 0);
}

// A stored description that does not parse: the slot says so, and a read loads the whole
// store (whose state answers) instead of the read-out that description goes with.
TEST(StoreSlotTest, AStoredDescriptionThatDoesNotParseIsReportedAndReadsLoadWhole) {
  const std::shared_ptr<Store> store = MakeStore();
  int warm_calls = 0;
  StoreSlot slot(
      "t", "s", adapt::v1::STORE_KIND_FAAST, std::string(12, '\xff'),
      [&]() -> absl::StatusOr<std::shared_ptr<Store>> { return store; },
      [&](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> {
        ++warm_calls;
        EXPECT_EQ(stored, nullptr);
        return nullptr;  // as the engine's: no description, the state is read; none here
      });
  const adapt::v1::StoreInfo info = slot.Describe();
  EXPECT_EQ(info.tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(info.spec().kind(), adapt::v1::STORE_KIND_FAAST);
  EXPECT_EQ(info.failure(), "the description stored in the catalog does not parse");
  auto read = slot.GetForRead();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->get(), store.get());
  EXPECT_EQ(warm_calls, 1);
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_HOT);
  EXPECT_TRUE(slot.Describe().failure().empty());
}

TEST(StoreSlotTest, AReadOfAColdSlotLoadsOnlyTheWarmForm) {
  int loads = 0, warm_loads = 0;
  const std::shared_ptr<Store> store = MakeStore();
  std::shared_ptr<WarmStore> warm;
  StoreSlot slot(
      "t", "s", ColdInfo(),
      [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
        ++loads;
        return store;
      },
      [&](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> {
        ++warm_loads;
        EXPECT_NE(stored, nullptr);  // the cold slot's description, as the engine uses it
        if (stored == nullptr) return absl::InternalError("no description");
        EXPECT_EQ(stored->examples(), 7u);
        EXPECT_EQ(stored->memory_bytes(), 1234u);
        warm = std::make_shared<WarmStore>(stored, MakeWarm()->Readout(), Backend());
        return warm;
      });
  bool loaded = false;
  auto read = slot.GetForRead(&loaded);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(loaded);
  EXPECT_EQ(read->get(), warm.get());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_WARM);
  EXPECT_EQ(slot.loaded(), nullptr);  // not hot
  EXPECT_EQ(slot.noted_bytes(), warm->bytes());
  const adapt::v1::StoreInfo info = slot.Describe();
  EXPECT_EQ(info.tier(), adapt::v1::TIER_WARM);
  EXPECT_EQ(info.memory_bytes(), warm->bytes());
  EXPECT_EQ(slot.loaded_bytes(), 1234u);  // what the whole store holds
  ASSERT_TRUE(slot.GetForRead(&loaded).ok());
  EXPECT_FALSE(loaded);
  EXPECT_EQ(warm_loads, 1);
  // A write needs the whole store: it is loaded, and the warm form goes.
  auto whole = slot.Get(&loaded);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(loaded);
  EXPECT_EQ(whole->get(), store.get());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_HOT);
  EXPECT_EQ(slot.GetForRead()->get(), store.get());
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(warm_loads, 1);
}

TEST(StoreSlotTest, AStoreReadWarmSharesItsColdDescriptionBothWays) {
  adapt::v1::StoreInfo cold = ColdInfo();
  cold.add_labels("a");
  cold.add_labels("b");
  std::shared_ptr<const adapt::v1::StoreInfo> given;
  StoreSlot slot(
      "t", "s", cold, []() -> absl::StatusOr<std::shared_ptr<Store>> { return MakeStore(); },
      [&](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> {
        given = stored;
        return std::make_shared<WarmStore>(stored, MakeWarm()->Readout(), Backend());
      });
  auto read = slot.GetForRead();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_NE(given, nullptr);
  const auto* warm = dynamic_cast<const WarmStore*>(read->get());
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(warm->info().get(), given.get());  // shared, not copied
  EXPECT_EQ(warm->SharedColdInfo().get(), given.get());
  adapt::v1::StoreInfo described;
  warm->Describe(&described);
  EXPECT_EQ(Labels(described), (std::vector<std::string>{"a", "b"}));  // not added twice
  read = absl::InternalError("released");
  adapt::v1::Tier tier = adapt::v1::TIER_UNSPECIFIED;
  ASSERT_NE(slot.BeginEvict(/*holders=*/0, &tier), nullptr);
  EXPECT_EQ(tier, adapt::v1::TIER_WARM);
  slot.FinishEvict(true, adapt::v1::StoreInfo());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_COLD);
  const adapt::v1::StoreInfo again = slot.Describe();
  EXPECT_EQ(again.examples(), 7u);
  EXPECT_EQ(Labels(again), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(slot.loaded_bytes(), 1234u);
  // A warm store made from a hot store's description keeps its labels in the read-out only,
  // and hands back a whole description when it goes cold.
  adapt::v1::StoreInfo hot = ColdInfo();
  hot.add_labels("a");
  hot.add_labels("b");
  const WarmStore trimmed(hot, MakeWarm()->Readout(), Backend());
  EXPECT_EQ(trimmed.info()->labels_size(), 0);
  EXPECT_EQ(Labels(*trimmed.SharedColdInfo()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(trimmed.SharedColdInfo()->memory_bytes(), 1234u);
}

TEST(StoreSlotTest, AStoreWithoutAWarmFormLoadsWholeForAReadToo) {
  int loads = 0;
  const std::shared_ptr<Store> store = MakeStore();
  StoreSlot slot(
      "t", "s", ColdInfo(),
      [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
        ++loads;
        return store;
      },
      [](const std::shared_ptr<const adapt::v1::StoreInfo>&)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> { return nullptr; });
  auto read = slot.GetForRead();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->get(), store.get());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_HOT);
  EXPECT_EQ(loads, 1);
}

TEST(StoreSlotTest, ReadsAreServedWarmWhileAWriteLoadsTheWholeStore) {
  absl::Notification loading, release;
  const std::shared_ptr<Store> store = MakeStore();
  const std::shared_ptr<WarmStore> warm = MakeWarm();
  StoreSlot slot(
      "t", "s", ColdInfo(),
      [&]() -> absl::StatusOr<std::shared_ptr<Store>> {
        loading.Notify();
        release.WaitForNotification();
        return store;
      },
      [&](const std::shared_ptr<const adapt::v1::StoreInfo>&)
          -> absl::StatusOr<std::shared_ptr<WarmStore>> { return warm; });
  ASSERT_TRUE(slot.GetForRead().ok());
  std::thread writer([&] { EXPECT_TRUE(slot.Get().ok()); });
  loading.WaitForNotification();
  auto read = slot.GetForRead();  // does not wait for the load
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->get(), warm.get());
  release.Notify();
  writer.join();
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_HOT);
}

TEST(StoreSlotTest, EvictionGoesHotToWarmToCold) {
  StoreSlot slot("t", "s", MakeStore(), []() -> absl::StatusOr<std::shared_ptr<Store>> {
    return absl::UnavailableError("not in this test");
  });
  std::vector<std::pair<adapt::v1::Tier, adapt::v1::Tier>> moves;
  std::vector<uint64_t> warm_sizes;
  slot.SetTierHook([&](adapt::v1::Tier from, adapt::v1::Tier to, uint64_t warm_bytes) {
    moves.push_back({from, to});
    warm_sizes.push_back(warm_bytes);
  });
  adapt::v1::Tier tier = adapt::v1::TIER_UNSPECIFIED;
  std::shared_ptr<Store> hot = slot.BeginEvict(/*holders=*/0, &tier);
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(tier, adapt::v1::TIER_HOT);
  adapt::v1::StoreInfo info;
  hot->Describe(&info);
  hot.reset();
  // Made from the hot store's description, as StoreDirectory::Evict makes it.
  auto warm = std::make_shared<WarmStore>(info, MakeWarm()->Readout(), Backend());
  const uint64_t warm_bytes = warm->bytes();
  slot.FinishEvict(true, info, std::move(warm));  // the slot holds it alone
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_WARM);
  EXPECT_EQ(slot.noted_bytes(), warm_bytes);
  EXPECT_TRUE(slot.resident());
  {
    auto held = slot.GetForRead();  // a read in flight holds the warm store
    ASSERT_TRUE(held.ok());
    EXPECT_EQ(slot.BeginEvict(0, &tier), nullptr);
  }
  std::shared_ptr<Store> w = slot.BeginEvict(0, &tier);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(tier, adapt::v1::TIER_WARM);
  w.reset();
  slot.FinishEvict(true, adapt::v1::StoreInfo());
  EXPECT_EQ(slot.tier(), adapt::v1::TIER_COLD);
  EXPECT_FALSE(slot.resident());
  EXPECT_EQ(slot.noted_bytes(), 0u);
  EXPECT_EQ(slot.loaded_bytes(), info.memory_bytes());  // the description it had when hot
  const std::vector<std::pair<adapt::v1::Tier, adapt::v1::Tier>> expected = {
      {adapt::v1::TIER_UNSPECIFIED, adapt::v1::TIER_HOT},
      {adapt::v1::TIER_HOT, adapt::v1::TIER_WARM},
      {adapt::v1::TIER_WARM, adapt::v1::TIER_COLD}};
  EXPECT_EQ(moves, expected);
  // The warm store's size arrives with it and leaves with it.
  EXPECT_EQ(warm_sizes, (std::vector<uint64_t>{0, warm_bytes, warm_bytes}));
}

TEST(StoreSlotTest, AWarmStorePredictsFromItsReadoutAndRefusesWrites) {
  const std::shared_ptr<WarmStore> warm = MakeWarm();
  const std::vector<float> keys = {0.2f, 0.9f, 5, 5, 3.0f, -1.0f, 0, 0};
  auto p = warm->Predict(keys.data(), 2, 4, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->version, 3u);
  ASSERT_EQ(p->label_ids.size(), 4u);
  EXPECT_EQ(p->label_ids[0], 1);  // 0.9 > 0.2
  EXPECT_FLOAT_EQ(p->scores[0], 0.9f);
  EXPECT_EQ(p->label_ids[2], 0);  // 3 > -1
  EXPECT_FLOAT_EQ(p->scores[3], -1.0f);
  EXPECT_EQ(warm->Predict(keys.data(), 1, 3, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto txn = warm->Begin(TxnKind::kAdapt);
  ExampleBatch batch;
  batch.rows = 1;
  batch.dim = 4;
  batch.keys = {1, 2, 3, 4};
  batch.labels = {"a"};
  EXPECT_EQ(txn->Add(batch).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(warm->Commit(*txn).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(warm->Compile({}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(warm->Snapshot().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace adaptd
