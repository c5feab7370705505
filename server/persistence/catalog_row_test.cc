// ReadCatalogRow against the generated parser: the fields start-up reads, the description's
// bytes and the record without them agree with a whole parse; a record in any other form is
// left to the whole parse.
#include "server/persistence/catalog_row.h"

#include <string>

#include "adapt/v1/snapshot.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace adaptd {
namespace {

using google::protobuf::util::MessageDifferencer;

adapt::v1::CatalogEntry Entry() {
  adapt::v1::CatalogEntry entry;
  adapt::v1::StoreSpec* spec = entry.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FALCON);
  spec->set_encoder("identity");
  spec->set_dim(256);
  entry.set_incarnation(17);
  entry.set_lsn(uint64_t{1} << 40);
  entry.set_state_bytes(123456);
  entry.set_state_chunks(2);
  entry.set_pinned(true);
  entry.set_readout_bytes(16400);
  entry.set_state_generation(9);
  adapt::v1::StoreInfo* info = entry.mutable_info();
  *info->mutable_spec() = *spec;
  info->set_version(3);
  info->set_examples(64);
  for (int i = 0; i < 16; ++i) info->add_labels("label-" + std::to_string(i));
  info->mutable_falcon();
  return entry;
}

TEST(CatalogRowTest, AgreesWithTheWholeParse) {
  const adapt::v1::CatalogEntry entry = Entry();
  const std::string record = entry.SerializeAsString();
  const std::optional<CatalogRow> row = ReadCatalogRow(record);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->incarnation, 17u);
  EXPECT_EQ(row->lsn, uint64_t{1} << 40);
  EXPECT_TRUE(row->pinned);
  EXPECT_TRUE(row->failure.empty());
  EXPECT_EQ(row->kind, adapt::v1::STORE_KIND_FALCON);
  EXPECT_TRUE(row->base.empty());

  adapt::v1::StoreInfo info;
  ASSERT_TRUE(info.ParseFromString(std::string(row->info)));
  EXPECT_TRUE(MessageDifferencer::Equals(info, entry.info()));

  adapt::v1::CatalogEntry bare;
  ASSERT_TRUE(bare.ParseFromString(CatalogRecordWithoutInfo(record, *row)));
  adapt::v1::CatalogEntry want = entry;
  want.clear_info();
  EXPECT_TRUE(MessageDifferencer::Equals(bare, want));
}

TEST(CatalogRowTest, TheBaseIsRead) {
  adapt::v1::CatalogEntry entry = Entry();
  entry.mutable_spec()->set_base("shared/curated");
  const std::optional<CatalogRow> row = ReadCatalogRow(entry.SerializeAsString());
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->base, "shared/curated");
  EXPECT_EQ(row->kind, adapt::v1::STORE_KIND_FALCON);
}

TEST(CatalogRowTest, AFailureIsRead) {
  adapt::v1::CatalogEntry entry = Entry();
  entry.set_failure("the log is damaged");
  const std::string record = entry.SerializeAsString();
  const std::optional<CatalogRow> row = ReadCatalogRow(record);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->failure, "the log is damaged");
}

// An entry written before create_lsn: its incarnation was its create record's LSN.
TEST(CatalogRowTest, TheCreateLsnIsReadOrIsTheIncarnationOfAnEntryWithout) {
  adapt::v1::CatalogEntry entry = Entry();
  std::optional<CatalogRow> row = ReadCatalogRow(entry.SerializeAsString());
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->create_lsn, 17u);
  EXPECT_EQ(CreateLsnOf(entry), 17u);
  entry.set_incarnation(uint64_t{1} << 63 | 5);
  entry.set_create_lsn(12);
  row = ReadCatalogRow(entry.SerializeAsString());
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->incarnation, uint64_t{1} << 63 | 5);
  EXPECT_EQ(row->create_lsn, 12u);
  EXPECT_EQ(CreateLsnOf(entry), 12u);
}

TEST(CatalogRowTest, FieldsInAnyOrderAndUnknownOnesAreRead) {
  const adapt::v1::CatalogEntry entry = Entry();
  adapt::v1::CatalogEntry info_only, rest = entry;
  *info_only.mutable_info() = entry.info();
  rest.clear_info();
  // The description first, then the rest, then a field this version does not know (99).
  const std::string unknown = std::string("\x98\x06\x05", 3);  // field 99, varint 5
  const std::string record = info_only.SerializeAsString() + rest.SerializeAsString() + unknown;
  const std::optional<CatalogRow> row = ReadCatalogRow(record);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->incarnation, 17u);
  EXPECT_EQ(row->kind, adapt::v1::STORE_KIND_FALCON);
  const std::string bare = CatalogRecordWithoutInfo(record, *row);
  EXPECT_EQ(bare, rest.SerializeAsString() + unknown);
}

TEST(CatalogRowTest, OtherFormsAreLeftToTheWholeParse) {
  const adapt::v1::CatalogEntry entry = Entry();
  const std::string record = entry.SerializeAsString();
  adapt::v1::CatalogEntry no_info = entry;
  no_info.clear_info();
  EXPECT_FALSE(ReadCatalogRow(no_info.SerializeAsString()).has_value());
  adapt::v1::CatalogEntry no_spec = entry;
  no_spec.clear_spec();
  EXPECT_FALSE(ReadCatalogRow(no_spec.SerializeAsString()).has_value());
  adapt::v1::CatalogEntry info_without_spec = entry;
  info_without_spec.mutable_info()->clear_spec();
  EXPECT_FALSE(ReadCatalogRow(info_without_spec.SerializeAsString()).has_value());
  // Given twice (a parse would merge them).
  adapt::v1::CatalogEntry info_only;
  *info_only.mutable_info() = entry.info();
  EXPECT_FALSE(ReadCatalogRow(record + info_only.SerializeAsString()).has_value());
  // Cut short anywhere, or not protobuf at all.
  for (size_t cut = 1; cut < record.size(); cut += 7) {
    const std::string shorter = record.substr(0, cut);
    adapt::v1::CatalogEntry parsed;
    if (!parsed.ParseFromString(shorter)) {
      EXPECT_FALSE(ReadCatalogRow(shorter).has_value()) << "cut at " << cut;
    }
  }
  EXPECT_FALSE(ReadCatalogRow(std::string(40, '\xff')).has_value());
  EXPECT_FALSE(ReadCatalogRow("").has_value());
}

}  // namespace
}  // namespace adaptd
