#include "server/stores/snapshot_file.h"

#include "gtest/gtest.h"

namespace adaptd {
namespace {

adapt::v1::StoreSnapshot Sample() {
  adapt::v1::StoreSnapshot s;
  s.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  s.mutable_spec()->set_encoder("identity");
  auto* f = s.mutable_faast();
  f->set_dim(2);
  for (double v : {1.0, 2.0, 2.0, 5.0}) f->add_g(v);
  return s;
}

TEST(SnapshotFileTest, RoundTrips) {
  auto file = EncodeSnapshotFile(Sample());
  ASSERT_TRUE(file.ok());
  auto back = DecodeSnapshotFile(*file);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), Sample().SerializeAsString());
}

TEST(SnapshotFileTest, RefusesForeignTruncatedAndCorruptFiles) {
  std::string file = *EncodeSnapshotFile(Sample());
  EXPECT_EQ(DecodeSnapshotFile("PK\x03\x04 not a snapshot at all").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeSnapshotFile(file.substr(0, file.size() - 3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::string corrupt = file;
  corrupt[corrupt.size() - 2] ^= 0x40;
  auto status = DecodeSnapshotFile(corrupt).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("checksum"), std::string::npos);
  std::string newer = file;
  newer[8] = 9;
  EXPECT_NE(DecodeSnapshotFile(newer).status().message().find("format version 9"),
            std::string::npos);
}

}  // namespace
}  // namespace adaptd
