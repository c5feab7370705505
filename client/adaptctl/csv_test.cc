#include "client/adaptctl/csv.h"

#include <string>
#include <vector>

#include "client/adaptctl/test_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

using ::testing::ElementsAre;

TEST(ParseCsvTest, HeaderRowsAndLines) {
  absl::StatusOr<Table> table = ParseCsv("a,b,c\n1,2,3\n4,5,6\n", "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->source, "t.csv");
  EXPECT_THAT(table->columns, ElementsAre("a", "b", "c"));
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_THAT(table->rows[1], ElementsAre("4", "5", "6"));
  EXPECT_THAT(table->lines, ElementsAre(2, 3));
  EXPECT_EQ(table->ColumnIndex("c"), 2);
  EXPECT_EQ(table->ColumnIndex("d"), -1);
}

TEST(ParseCsvTest, QuotedFieldsWithCommasQuotesAndNewlines) {
  absl::StatusOr<Table> table = ParseCsv(
      "id,text\n"
      "1,\"hello, world\"\n"
      "2,\"say \"\"hi\"\"\"\n"
      "3,\"two\nlines\"\n"
      "4,\"\"\n"
      "5,plain \"inch\" mark\n",
      "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows.size(), 5u);
  EXPECT_EQ(table->rows[0][1], "hello, world");
  EXPECT_EQ(table->rows[1][1], "say \"hi\"");
  EXPECT_EQ(table->rows[2][1], "two\nlines");
  EXPECT_EQ(table->rows[3][1], "");
  EXPECT_EQ(table->rows[4][1], "plain \"inch\" mark");
  // The record after a two-line field starts two lines later.
  EXPECT_THAT(table->lines, ElementsAre(2, 3, 4, 6, 7));
}

TEST(ParseCsvTest, CrlfBomBlankLinesAndNoFinalNewline) {
  absl::StatusOr<Table> table =
      ParseCsv("\xEF\xBB\xBFx,y\r\n1,2\r\n\r\n\"a\r\nb\",3\r\n4,5", "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns, ElementsAre("x", "y"));
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_THAT(table->rows[0], ElementsAre("1", "2"));
  EXPECT_THAT(table->rows[1], ElementsAre("a\r\nb", "3"));
  EXPECT_THAT(table->rows[2], ElementsAre("4", "5"));
  EXPECT_THAT(table->lines, ElementsAre(2, 4, 6));
}

TEST(ParseCsvTest, EmptyFieldsAreKept) {
  absl::StatusOr<Table> table = ParseCsv("a,b,c\n,,\n1,,3\n", "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->rows[0], ElementsAre("", "", ""));
  EXPECT_THAT(table->rows[1], ElementsAre("1", "", "3"));
}

TEST(ParseCsvTest, HeaderOnlyHasNoRows) {
  absl::StatusOr<Table> table = ParseCsv("a,b\n", "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->rows.empty());
}

TEST(ParseCsvTest, WrongFieldCountNamesTheLine) {
  absl::StatusOr<Table> table = ParseCsv("a,b\n1,2\n3\n", "t.csv");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), Begins("t.csv:3: 1 fields, the header has 2"));
}

TEST(ParseCsvTest, UnterminatedQuoteIsAnError) {
  absl::StatusOr<Table> table = ParseCsv("a,b\n1,\"open\n2,3\n", "t.csv");
  EXPECT_THAT(table.status().message(), Begins("t.csv:2: quoted field is never closed"));
}

TEST(ParseCsvTest, TextAfterClosingQuoteIsAnError) {
  absl::StatusOr<Table> table = ParseCsv("a,b\n1,\"x\"y\n", "t.csv");
  EXPECT_THAT(table.status().message(), Begins("t.csv:2: unexpected character"));
}

TEST(ParseCsvTest, EmptyFileAndDuplicateColumnsAreErrors) {
  EXPECT_THAT(ParseCsv("", "t.csv").status().message(), Begins("t.csv: empty file"));
  EXPECT_THAT(ParseCsv("\n\n", "t.csv").status().message(), Begins("t.csv: empty file"));
  EXPECT_THAT(ParseCsv("a,b,a\n", "t.csv").status().message(),
              Begins("t.csv:1: duplicate column \"a\""));
}

TEST(FormatCsvRecordTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(FormatCsvRecord({"a", "b c", "1.5"}), "a,b c,1.5\n");
  EXPECT_EQ(FormatCsvRecord({"x,y", "say \"hi\"", "two\nlines", "cr\r"}),
            "\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\r\"\n");
  EXPECT_EQ(FormatCsvRecord({""}), "\"\"\n");
  EXPECT_EQ(FormatCsvRecord({"", ""}), ",\n");
}

TEST(FormatCsvRecordTest, RoundTripsThroughTheReader) {
  const std::vector<std::string> fields = {"plain", "a,b", "q\"q", "multi\r\nline", "", " sp "};
  const std::string text = FormatCsvRecord({"c1", "c2", "c3", "c4", "c5", "c6"}) +
                           FormatCsvRecord(fields) + FormatCsvRecord(fields);
  absl::StatusOr<Table> table = ParseCsv(text, "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[0], fields);
  EXPECT_EQ(table->rows[1], fields);
}

TEST(FormatCsvTest, TypedCells) {
  OutputTable table;
  table.columns = {"id", "label", "score"};
  table.rows.push_back({Cell(std::string("r1")), Cell(std::string("cat, big")), Cell(0.1f)});
  table.rows.push_back({Cell(std::string("r2")), Cell(), Cell()});
  EXPECT_EQ(FormatCsv(table), "id,label,score\nr1,\"cat, big\",0.1\nr2,,\n");
}

}  // namespace
}  // namespace adaptctl
