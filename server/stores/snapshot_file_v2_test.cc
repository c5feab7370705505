// Snapshot file format 2 (snapshot_file.h): every built-in kind travels with its arrays as
// sections and comes back bit for bit; format-1 files still load; damaged or inconsistent
// files are refused with InvalidArgument naming what is wrong.
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/base/binary_format.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

using adapt::v1::ArraySection;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSnapshot;

constexpr int64_t kDim = 8;

// A store of `kind` holding a few examples (and, for kinds that compile, a published version).
std::unique_ptr<Store> Filled(const StoreKind& kind, OutputSpec::Kind output) {
  OutputSpec out;
  out.set_kind(output);
  if (output == OutputSpec::KIND_VECTOR) out.set_dim(3);
  absl::StatusOr<adapt::v1::StoreSpec> spec = SmallSpec(kind, kDim, out);
  EXPECT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(*spec, &kernels::HostBackend());
  EXPECT_TRUE(store.ok()) << store.status();
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  for (int round = 0; round < 2; ++round) {
    ExampleBatch batch;
    batch.rows = 11;
    batch.dim = kDim;
    for (int64_t i = 0; i < batch.rows * kDim; ++i) batch.keys.push_back(normal(rng));
    for (int64_t r = 0; r < batch.rows; ++r) {
      if (output == OutputSpec::KIND_LABELS) {
        batch.labels.push_back(r % 3 == 0 ? "ant" : (r % 3 == 1 ? "bee" : "cat"));
      } else {
        for (int c = 0; c < 3; ++c) batch.targets.push_back(normal(rng));
      }
    }
    std::unique_ptr<Txn> txn = (*store)->Begin(TxnKind::kAdapt);
    EXPECT_TRUE(txn->Add(batch).ok());
    EXPECT_TRUE((*store)->Commit(*txn).ok());
    if (round == 0) (void)(*store)->Compile(adapt::v1::CompileRequest());
  }
  return *std::move(store);
}

std::string SnapshotBytes(const Store& store) {
  absl::StatusOr<StoreSnapshot> s = store.Snapshot();
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->SerializeAsString() : "";
}

// `file` with its header replaced by `edit(header)` (lengths and header checksum kept valid).
std::string WithHeader(const std::string& file, const std::function<void(StoreSnapshot&)>& edit) {
  const uint64_t length = GetLittle<uint64_t>(file.data() + 12);
  StoreSnapshot header;
  EXPECT_TRUE(header.ParseFromString(file.substr(kSnapshotHeaderBytes, length)));
  edit(header);
  const std::string payload = header.SerializeAsString();
  std::string out = file.substr(0, 8);
  PutLittle<uint32_t>(&out, 2);
  PutLittle<uint64_t>(&out, payload.size());
  PutLittle<uint32_t>(&out, Crc32Of(payload));
  return out + payload + file.substr(kSnapshotHeaderBytes + length);
}

// A format-1 file written independently of the encoder: the header, then the protobuf.
std::string Version1File(const StoreSnapshot& snapshot) {
  const std::string payload = snapshot.SerializeAsString();
  std::string out = "ADAPTDSS";
  PutLittle<uint32_t>(&out, 1);
  PutLittle<uint64_t>(&out, payload.size());
  PutLittle<uint32_t>(&out, Crc32Of(payload));
  return out + payload;
}

TEST(SnapshotFileV2Test, EveryKindRoundTripsBitForBit) {
  for (const StoreKind* kind : StoreKinds::Global().All()) {
    for (OutputSpec::Kind output : {OutputSpec::KIND_LABELS, OutputSpec::KIND_VECTOR}) {
      SCOPED_TRACE(kind->name + (output == OutputSpec::KIND_LABELS ? " labels" : " vector"));
      std::unique_ptr<Store> store = Filled(*kind, output);
      absl::StatusOr<std::string> file = EncodeStoreFile(*store);
      ASSERT_TRUE(file.ok()) << file.status();
      absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(*file);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_GT(decoded->header.arrays_size(), 0) << "the big arrays travel as sections";
      absl::StatusOr<std::unique_ptr<Store>> restored =
          RestoreStore(decoded->header, decoded->arrays, &kernels::HostBackend());
      ASSERT_TRUE(restored.ok()) << restored.status();
      EXPECT_EQ(SnapshotBytes(**restored), SnapshotBytes(*store));
      EXPECT_EQ(EncodeStoreFile(**restored).value(), *file);
      // The one-protobuf view of the same file is the store's Snapshot().
      absl::StatusOr<StoreSnapshot> inlined = DecodeSnapshotFile(*file);
      ASSERT_TRUE(inlined.ok()) << inlined.status();
      EXPECT_EQ(inlined->SerializeAsString(), SnapshotBytes(*store));
    }
  }
}

TEST(SnapshotFileV2Test, Version1FilesStillLoad) {
  for (const StoreKind* kind : StoreKinds::Global().All()) {
    SCOPED_TRACE(kind->name);
    std::unique_ptr<Store> store = Filled(*kind, OutputSpec::KIND_LABELS);
    const std::string v1 = Version1File(store->Snapshot().value());
    absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(v1);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_TRUE(decoded->arrays.empty());
    absl::StatusOr<std::unique_ptr<Store>> restored =
        RestoreStore(decoded->header, decoded->arrays, &kernels::HostBackend());
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(SnapshotBytes(**restored), SnapshotBytes(*store));
    // Written again it is a format-2 file of the same state.
    EXPECT_EQ(EncodeStoreFile(**restored).value(), EncodeStoreFile(*store).value());
  }
}

class DamagedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Filled(*StoreKinds::Global().Find("fwpkm"), OutputSpec::KIND_LABELS);
    file_ = EncodeStoreFile(*store_).value();
    const StoreSnapshot header = DecodeSnapshotState(file_).value().header;
    for (int i = 0; i < header.arrays_size(); ++i) {
      if (header.arrays(i).field() == "values") values_ = i;
    }
    ASSERT_GE(values_, 0);
  }

  static void ExpectRefused(const std::string& file, const std::string& words) {
    absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(file);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << decoded.status();
    EXPECT_NE(decoded.status().message().find(words), std::string::npos) << decoded.status();
  }

  std::unique_ptr<Store> store_;
  std::string file_;
  int values_ = -1;
};

TEST_F(DamagedFileTest, TruncatedPaddedAndCorruptSections) {
  ExpectRefused(file_.substr(0, file_.size() - 1), "truncated");
  ExpectRefused(file_.substr(0, file_.size() / 2), "truncated");
  ExpectRefused(file_ + "x", "padded");
  std::string corrupt = file_;
  corrupt[corrupt.size() - 6] ^= 0x01;  // inside the last section
  ExpectRefused(corrupt, "checksum mismatch");
  ExpectRefused(file_.substr(0, 8) + std::string("\x03\0\0\0", 4) + file_.substr(12),
                "format version 3 is not supported");
}

TEST_F(DamagedFileTest, SectionsThatDisagreeWithTheHeader) {
  const int v = values_;
  const uint64_t past_the_end = file_.size();
  auto more = WithHeader(file_, [v, past_the_end](StoreSnapshot& h) {
    h.mutable_arrays(v)->set_count(h.arrays(v).count() + past_the_end);
  });
  ExpectRefused(more, "truncated: section " + std::to_string(v) + " (values)");
  auto fewer = WithHeader(
      file_, [v](StoreSnapshot& h) { h.mutable_arrays(v)->set_count(h.arrays(v).count() - 1); });
  ExpectRefused(fewer, "checksum mismatch");
  ExpectRefused(WithHeader(file_, [](StoreSnapshot& h) { h.mutable_arrays()->RemoveLast(); }),
                "padded");
  ExpectRefused(WithHeader(file_, [](StoreSnapshot& h) { h.add_arrays()->CopyFrom(h.arrays(0)); }),
                "has a section already");
  ExpectRefused(
      WithHeader(file_, [v](StoreSnapshot& h) { h.mutable_arrays(v)->set_field("nope"); }),
      "has no field nope");
  ExpectRefused(WithHeader(file_,
                           [v](StoreSnapshot& h) {
                             h.mutable_arrays(v)->set_type(ArraySection::TYPE_FLOAT64);
                           }),
                "not a repeated field of TYPE_FLOAT64");
  ExpectRefused(WithHeader(file_,
                           [v](StoreSnapshot& h) {
                             h.mutable_arrays(v)->set_type(static_cast<ArraySection::Type>(77));
                           }),
                "unknown element type 77");
  ExpectRefused(WithHeader(file_, [](StoreSnapshot& h) { h.mutable_fwpkm()->add_values(1.0f); }),
                "holds values in the header as well");
  ExpectRefused(WithHeader(file_, [](StoreSnapshot& h) { h.clear_state(); }),
                "holds no state message");
  ExpectRefused(Version1File(DecodeSnapshotState(file_).value().header), "a format-1 snapshot");
}

TEST_F(DamagedFileTest, ASectionOfTheWrongSizeIsRefusedByTheKind) {
  // Consistent as a file (sizes and checksums agree), wrong for the store: one value short.
  absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(file_);
  ASSERT_TRUE(decoded.ok());
  StoreStateOut state{decoded->header, decoded->arrays.AsOut()};
  state.header.clear_arrays();
  state.arrays[values_].count -= 1;
  state.arrays[values_].fill = [](char*) { return true; };
  const std::string file = EncodeSnapshotFile(state).value();
  decoded = DecodeSnapshotState(file);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<std::unique_ptr<Store>> restored =
      RestoreStore(decoded->header, decoded->arrays, &kernels::HostBackend());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(restored.status().message().find("snapshot.fwpkm.values"), std::string::npos)
      << restored.status();
}

TEST(StoreStateTest, AStatePastOneProtobufIsRefusedAsOneMessageOnly) {
  StoreStateOut state;
  state.header.mutable_fwpkm();
  bool filled = false;
  state.Add<float>("values", uint64_t{1} << 31, [&filled](ArrayWriter<float>&) { filled = true; });
  absl::StatusOr<StoreSnapshot> inlined = InlineState(state);
  EXPECT_EQ(inlined.status().code(), absl::StatusCode::kResourceExhausted) << inlined.status();
  EXPECT_FALSE(filled) << "refused before copying anything";
}

}  // namespace
}  // namespace adaptd
