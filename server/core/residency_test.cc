// Residency: over the budget, the least recently used stores go first, a store someone holds
// is passed over for the next one, and nothing is evicted while the total fits; memory no
// store counts is part of the total and is released before a store is evicted; remembered
// predictions count in the total and go before any store.
#include "server/core/residency.h"

#include <cstdint>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

class ResidencyTest : public ::testing::Test {
 protected:
  std::shared_ptr<StoreSlot> Slot(const std::string& name) {
    adapt::v1::StoreSpec spec;
    spec.set_kind(adapt::v1::STORE_KIND_FAAST);
    spec.set_dim(16);
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    std::shared_ptr<Store> store = CreateStore(spec, backend_.get()).value();
    // The loader makes a fresh store (the slot must be the store's only holder to evict it).
    auto slot = std::make_shared<StoreSlot>("t", name, store, [this, spec] {
      return absl::StatusOr<std::shared_ptr<Store>>(CreateStore(spec, backend_.get()).value());
    });
    absl::SleepFor(absl::Milliseconds(2));  // distinct last-use times, in creation order
    return slot;
  }
  // Evicts as the engine does, without a journal: the slot alone holds the store.
  bool Evict(const std::shared_ptr<StoreSlot>& slot) {
    std::shared_ptr<Store> store = slot->BeginEvict(/*holders=*/0);
    if (store == nullptr) return false;
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    store.reset();
    slot->FinishEvict(true, info);
    evicted_.push_back(slot->name());
    return true;
  }
  std::unique_ptr<Residency> Make(uint64_t budget, Residency::Overhead overhead = nullptr,
                                  uint64_t headroom = 0) {
    return std::make_unique<Residency>(
        budget, [this](const std::shared_ptr<StoreSlot>& s) { return Evict(s); },
        [this](uint64_t resident) { observed_.push_back(resident); }, std::move(overhead),
        headroom);
  }

  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
  std::vector<std::string> evicted_;
  std::vector<uint64_t> observed_;
};

TEST_F(ResidencyTest, TheLeastRecentlyUsedGoFirstUntilTheTotalFits) {
  auto a = Slot("a"), b = Slot("b"), c = Slot("c");
  const uint64_t each = a->loaded_bytes();
  ASSERT_GT(each, 0u);
  auto residency = Make(2 * each);
  residency->Stop();  // rounds on this thread only
  for (auto& s : {a, b, c}) residency->Loaded(s);
  ASSERT_TRUE(a->Get().ok());  // a is now the most recently used
  EXPECT_EQ(residency->EvictNow(), 2 * each);
  EXPECT_EQ(evicted_, std::vector<std::string>{"b"});
  EXPECT_EQ(b->loaded(), nullptr);
  EXPECT_EQ(b->Describe().tier(), adapt::v1::TIER_COLD);
  // Within the budget nothing more goes; a load brings b back and makes c the oldest.
  EXPECT_EQ(residency->EvictNow(), 2 * each);
  ASSERT_TRUE(b->Get().ok());
  residency->Loaded(b);
  EXPECT_EQ(residency->EvictNow(), 2 * each);
  EXPECT_EQ(evicted_, (std::vector<std::string>{"b", "c"}));
}

TEST_F(ResidencyTest, AStoreInUseIsPassedOver) {
  auto a = Slot("a"), b = Slot("b");
  const uint64_t each = a->loaded_bytes();
  auto residency = Make(each);
  residency->Stop();
  residency->Loaded(a);
  residency->Loaded(b);
  std::shared_ptr<Store> held = a->Get().value();  // a call holds a (and it is now newest)
  ASSERT_TRUE(b->Get().ok());                      // b is newest; a is older but held
  EXPECT_EQ(residency->EvictNow(), each);
  EXPECT_EQ(evicted_, std::vector<std::string>{"b"});
  EXPECT_NE(a->loaded(), nullptr);
}

TEST_F(ResidencyTest, TheThreadEvictsAfterALoad) {
  auto a = Slot("a"), b = Slot("b");
  auto residency = Make(a->loaded_bytes());
  residency->Loaded(a);
  residency->Loaded(b);
  // Bounded wait for the background round.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while ((a->loaded() != nullptr) == (b->loaded() != nullptr) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  residency->Stop();
  EXPECT_EQ(evicted_, std::vector<std::string>{"a"});
}

TEST_F(ResidencyTest, MemoryNoStoreCountsIsInTheTotalAndReleasedFirst) {
  auto a = Slot("a"), b = Slot("b");
  const uint64_t each = a->loaded_bytes();
  uint64_t idle = 3 * each, kept = 0;  // a cache that can let go of all but `kept`
  int releases = 0;
  auto residency = Make(2 * each, [&](bool release) {
    if (release) {
      ++releases;
      idle = kept;
    }
    return idle;
  });
  residency->Stop();
  residency->Loaded(a);
  residency->Loaded(b);
  // Over the budget with the cache; releasing it is enough: no store goes.
  EXPECT_EQ(residency->EvictNow(), 2 * each);
  EXPECT_EQ(releases, 1);
  EXPECT_TRUE(evicted_.empty());
  // What cannot be released counts: now a store must go.
  idle = kept = each / 2;
  EXPECT_EQ(residency->EvictNow(), each + each / 2);
  EXPECT_EQ(evicted_, std::vector<std::string>{"a"});
}

TEST_F(ResidencyTest, TheRunningTotalFollowsLoadsGrowthEvictionsAndDeletes) {
  auto a = Slot("a"), b = Slot("b");
  const uint64_t each = a->loaded_bytes();
  auto residency = Make(10 * each);
  residency->Stop();
  EXPECT_EQ(residency->ResidentBytes(), 0u);
  residency->Loaded(a);
  residency->Loaded(a);  // reported twice, counted once
  EXPECT_EQ(residency->ResidentBytes(), each);
  residency->Loaded(b);
  EXPECT_EQ(residency->ResidentBytes(), 2 * each);
  EXPECT_EQ(observed_.back(), 2 * each);  // each report is observed, without a round
  b->NoteBytes(each, /*beside=*/100);     // a commit that grew b
  residency->Grew();
  EXPECT_EQ(residency->ResidentBytes(), 2 * each + 100);
  EXPECT_EQ(observed_.back(), 2 * each + 100);
  ASSERT_TRUE(Evict(a));  // a goes cold: it holds nothing now
  EXPECT_EQ(residency->ResidentBytes(), each + 100);
  b.reset();  // deleted: its share leaves the total with it
  EXPECT_EQ(residency->ResidentBytes(), 0u);
  ASSERT_TRUE(a->Get().ok());  // loaded again: counted again
  residency->Loaded(a);
  EXPECT_EQ(residency->ResidentBytes(), each);
  EXPECT_EQ(evicted_, std::vector<std::string>{"a"});
}

TEST_F(ResidencyTest, NoRoundRunsUnderTheBudgetAndARoundFreesTheHeadroom) {
  std::vector<std::shared_ptr<StoreSlot>> slots;
  for (const char* name : {"a", "b", "c", "d", "e"}) slots.push_back(Slot(name));
  const uint64_t each = slots[0]->loaded_bytes();
  // Budget: four stores and a half; headroom: two stores.
  auto residency = Make(4 * each + each / 2, nullptr, 2 * each);
  residency->Stop();
  for (int i = 0; i < 4; ++i) residency->Loaded(slots[i]);
  EXPECT_EQ(residency->EvictNow(), 4 * each);  // fits: nothing goes
  EXPECT_TRUE(evicted_.empty());
  residency->Loaded(slots[4]);
  // Five are over the budget; the round goes on to the headroom (2.5 stores): three go, the
  // oldest first.
  EXPECT_EQ(residency->EvictNow(), 2 * each);
  EXPECT_EQ(evicted_, (std::vector<std::string>{"a", "b", "c"}));
}

// The ring a store with a feedback window of `count` keeps, counted in `slot` as the engine
// counts it (StoreDirectory::RememberedIn).
std::shared_ptr<RememberedPredictions> RingOf(const std::shared_ptr<StoreSlot>& slot,
                                              uint32_t count) {
  StoreSlot* counted = slot.get();
  return slot->Remembered([&] {
    adapt::v1::FeedbackWindow window;
    window.set_count(count);
    return std::make_shared<RememberedPredictions>(
        1, window, 2, [counted](int64_t delta) { counted->AddRememberedBytes(delta); });
  });
}

void Fill(RememberedPredictions& ring, int n, int dim) {
  for (int i = 0; i < n; ++i) {
    RememberedPrediction served;
    served.served = absl::Now();
    served.key.assign(dim, 0.5f);
    ring.Remember(std::move(served));
  }
}

TEST_F(ResidencyTest, RememberedPredictionsGoBeforeAnyStore) {
  auto a = Slot("a"), b = Slot("b");
  const uint64_t each = a->loaded_bytes();
  auto residency = Make(2 * each + 10000);
  residency->Stop();  // rounds on this thread only
  for (auto& s : {a, b}) residency->Loaded(s);
  std::shared_ptr<RememberedPredictions> ring = RingOf(a, 1000);
  Fill(*ring, 1000, 16);
  ASSERT_EQ(a->remembered_bytes(), ring->bytes());
  ASSERT_EQ(a->noted_bytes(), a->store_bytes() + ring->bytes());
  ASSERT_GT(residency->ResidentBytes(), 2 * each + 10000);  // the ring alone is over the budget
  EXPECT_LE(residency->EvictNow(), 2 * each + 10000);
  EXPECT_TRUE(evicted_.empty());
  EXPECT_NE(a->loaded(), nullptr);
  EXPECT_NE(b->loaded(), nullptr);
  EXPECT_GT(ring->size(), 0u);  // only as many as the budget needed
  EXPECT_LT(ring->size(), 1000u);
  EXPECT_EQ(a->remembered_bytes(), ring->bytes());
  EXPECT_EQ(residency->ResidentBytes(), 2 * each + ring->bytes());
}

TEST_F(ResidencyTest, TenThousandStoresWithFullWindowsStayWithinTheBudget) {
  constexpr int kStores = 10000, kWindow = 10, kDim = 32;
  constexpr uint64_t kBudget = 4 << 20;
  auto residency = Make(kBudget);
  residency->Stop();  // rounds on this thread only, after each hundred stores' windows fill
  std::vector<std::shared_ptr<StoreSlot>> slots;
  std::vector<std::shared_ptr<RememberedPredictions>> rings;
  uint64_t served_bytes = 0;  // what the full windows would hold unbounded
  for (int i = 0; i < kStores; ++i) {
    adapt::v1::StoreInfo info;
    info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
    info.mutable_spec()->mutable_feedback()->set_count(kWindow);
    // Cold slots (no loader is called): the rings stay with a slot in every tier.
    slots.push_back(std::make_shared<StoreSlot>("t", "s" + std::to_string(i), info, nullptr));
    residency->Loaded(slots.back());
    rings.push_back(RingOf(slots.back(), kWindow));
    Fill(*rings.back(), kWindow, kDim);
    served_bytes += rings.back()->bytes();
    if (i % 100 == 99) {
      ASSERT_LE(residency->EvictNow(), kBudget) << "after " << i + 1 << " stores";
    }
  }
  EXPECT_GT(served_bytes, 5 * kBudget);  // unbounded, the windows would pass the budget
  uint64_t held = 0;
  for (const auto& ring : rings) held += ring->bytes();
  EXPECT_EQ(residency->ResidentBytes(), held);  // every remembered byte is counted
  EXPECT_LE(held, kBudget);
  EXPECT_GT(held, kBudget / 2);  // and only what the budget needed was dropped
  EXPECT_TRUE(evicted_.empty());
  EXPECT_EQ(slots[0]->feedback_window(), static_cast<uint32_t>(kWindow));
}

}  // namespace
}  // namespace adaptd
