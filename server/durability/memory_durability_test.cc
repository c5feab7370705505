// What only the in-memory durability shows: two servers on one disk, the later one holding
// every store it recovered, so the earlier one's appends fail with ownership lost and change
// nothing, while the later one has every write the earlier one acknowledged.
#include "server/durability/memory_durability.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

class MemoryDurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = kernels::MakeCpuBackend(1); }

  std::unique_ptr<MemoryDurability> Open(std::vector<RecoveredStore>* recovered) {
    auto opened = MemoryDurability::Open(disk_, backend_.get(), recovered);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? *std::move(opened) : nullptr;
  }

  static adapt::v1::StoreSpec Spec() {
    adapt::v1::OutputSpec labels;
    labels.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    return SmallSpec(*StoreKinds::Global().Find("falcon"), 4, labels).value();
  }

  static adapt::v1::WalWrite Write(const ExampleBatch& batch) {
    adapt::v1::WalWrite write;
    *write.add_batches() = ToWalBatch(batch);
    return write;
  }

  static ExampleBatch Batch(float value) {
    ExampleBatch batch;
    batch.rows = 1;
    batch.dim = 4;
    batch.keys = {value, 1, 0, 0};
    batch.labels = {"x"};
    return batch;
  }

  static absl::StatusOr<CommitResult> Adapt(MemoryDurability& durability, Store* store,
                                            const ExampleBatch& batch, const Fence& fence) {
    return CommitWrite(durability, "t", "s", store, Write(batch), fence,
                       [store, batch]() -> absl::StatusOr<CommitResult> {
                         auto txn = store->Begin(TxnKind::kAdapt);
                         if (absl::Status added = txn->Add(batch); !added.ok()) return added;
                         return store->Commit(*txn);
                       });
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::shared_ptr<MemoryDisk> disk_ = std::make_shared<MemoryDisk>();
};

TEST_F(MemoryDurabilityTest, AServerOpenedLaterTakesTheStoresOverAndFencesTheEarlierOne) {
  std::vector<RecoveredStore> none;
  std::unique_ptr<MemoryDurability> first = Open(&none);
  ASSERT_NE(first, nullptr);
  std::shared_ptr<Store> store = CreateStore(Spec(), backend_.get()).value();
  const Fence first_fence = first->CurrentFence("t", "s");
  ASSERT_TRUE(first->AppendCreate("t", "s", store, Spec(), false, first_fence).ok());
  ASSERT_TRUE(Adapt(*first, store.get(), Batch(1), first_fence).ok());

  // A second server opens on the same disk while the first still runs: it claims the store.
  std::vector<RecoveredStore> recovered;
  std::unique_ptr<MemoryDurability> second = Open(&recovered);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(EncodeStoreFile(*recovered[0].store).value(), EncodeStoreFile(*store).value());
  EXPECT_NE(second->CurrentFence("t", "s"), first_fence);

  // The first server's appends now fail, with its own fence, and change nothing.
  const size_t records = disk_->LogRecords("t/s");
  absl::StatusOr<CommitResult> stale = Adapt(*first, store.get(), Batch(2), first_fence);
  EXPECT_TRUE(IsOwnershipLost(stale.status())) << stale.status();
  EXPECT_TRUE(IsOwnershipLost(first->AppendPin("t", "s", store.get(), true, first_fence)));
  EXPECT_TRUE(IsOwnershipLost(first->AppendDelete("t", "s", first_fence).status()));
  EXPECT_EQ(disk_->LogRecords("t/s"), records);
  // Nor can it create the name again while the second holds it.
  std::shared_ptr<Store> other = CreateStore(Spec(), backend_.get()).value();
  EXPECT_TRUE(
      IsOwnershipLost(first->AppendCreate("t", "s", other, Spec(), false, first_fence).status()));

  // The second server writes on; a third server sees its writes and none of the stale ones.
  Store* taken = recovered[0].store.get();
  ASSERT_TRUE(Adapt(*second, taken, Batch(3), second->CurrentFence("t", "s")).ok());
  const std::string expected = EncodeStoreFile(*taken).value();
  std::vector<RecoveredStore> third_recovered;
  std::unique_ptr<MemoryDurability> third = Open(&third_recovered);
  ASSERT_EQ(third_recovered.size(), 1u);
  EXPECT_EQ(EncodeStoreFile(*third_recovered[0].store).value(), expected);
  EXPECT_FALSE(third_recovered[0].pinned);
}

}  // namespace
}  // namespace adaptd
