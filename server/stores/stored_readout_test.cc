// StoredReadout: a read-out written and read back is the same read-out (weights bit for bit,
// labels, version) with the same key preparation made again from the spec; a record that
// does not hold together is DataLoss naming where it was read.
#include "server/stores/stored_readout.h"

#include <cstring>
#include <random>
#include <vector>

#include "adapt/v1/snapshot.pb.h"
#include "gtest/gtest.h"
#include "server/stores/falcon_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;

TEST(StoredReadoutTest, AFalconReadOutRoundTripsWithItsKeyNorm) {
  constexpr int64_t kD = 5;
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(1);
  adapt::v1::StoreSpec spec = falcon_test::Spec(FalconParams::VARIANT_1, OutputSpec::KIND_LABELS);
  spec.set_dim(kD);
  spec.mutable_falcon()->set_key_norm(FalconParams::KEY_NORM_L2);
  std::unique_ptr<FalconStore> store = falcon_test::Make(spec, backend.get());
  ASSERT_NE(store, nullptr);
  std::mt19937_64 rng(3);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 6 * kD, 3.0f);
  auto txn = store->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(faast_test::LabelBatch(keys, kD, {"a", "b", "c", "a", "b", "c"})).ok());
  ASSERT_TRUE(store->Commit(*txn).ok());
  const std::shared_ptr<const LinearReadout> want = store->Readout();
  ASSERT_NE(want, nullptr);
  ASSERT_TRUE(want->prepare);

  auto got = DecodeReadout(EncodeReadout(*want), store->spec(), "here");
  ASSERT_TRUE(got.ok()) << got.status();
  const LinearReadout& r = **got;
  EXPECT_EQ(r.version, want->version);
  EXPECT_EQ(r.dim, want->dim);
  EXPECT_EQ(r.columns, want->columns);
  EXPECT_TRUE(r.labels);
  ASSERT_NE(r.label_names, nullptr);
  EXPECT_EQ(*r.label_names, *want->label_names);
  ASSERT_EQ(r.weights.size(), want->weights.size());
  EXPECT_EQ(std::memcmp(r.weights.data(), want->weights.data(), r.weights.size() * sizeof(float)),
            0);
  // The keys are prepared as the store's own read-out prepares them, bit for bit.
  ASSERT_TRUE(r.prepare);
  std::vector<float> x = keys, y = keys;
  want->prepare(6, x.data());
  r.prepare(6, y.data());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
  EXPECT_NE(x, keys);  // the preparation did something

  // Without a key norm there is nothing to prepare.
  spec.mutable_falcon()->set_key_norm(FalconParams::KEY_NORM_NONE);
  got = DecodeReadout(EncodeReadout(*want), spec, "here");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE((*got)->prepare);
}

TEST(StoredReadoutTest, ARecordThatDoesNotHoldTogetherIsDataLoss) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  adapt::v1::StoredReadout good;
  good.set_version(2);
  good.set_dim(2);
  good.set_columns(2);
  good.set_labels(true);
  good.add_label_names("x");
  good.add_label_names("y");
  for (float w : {1.0f, 2.0f, 3.0f, 4.0f}) good.add_weights(w);
  ASSERT_TRUE(DecodeReadout(good.SerializeAsString(), spec, "r").ok());

  auto expect_loss = [&](const std::string& record, const std::string& why) {
    auto got = DecodeReadout(record, spec, "the read-out of t/s");
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << why;
    EXPECT_EQ(got.status().message().rfind("the read-out of t/s: ", 0), 0u) << got.status();
  };
  expect_loss("\xff\xff\xff", "does not parse");
  adapt::v1::StoredReadout bad = good;
  bad.add_weights(5.0f);
  expect_loss(bad.SerializeAsString(), "five weights for 2 × 2");
  bad = good;
  bad.clear_label_names();
  bad.add_label_names("x");
  expect_loss(bad.SerializeAsString(), "one name for two label columns");
  bad = good;
  bad.set_dim(0);
  bad.clear_weights();
  expect_loss(bad.SerializeAsString(), "empty");
}

}  // namespace
}  // namespace adaptd
