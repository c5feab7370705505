#include "client/adaptctl/jsonl.h"

#include "client/adaptctl/test_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

using ::testing::ElementsAre;

TEST(ParseJsonLinesTest, ColumnsInOrderOfFirstAppearance) {
  absl::StatusOr<Table> table = ParseJsonLines(
      "{\"z\": 1, \"a\": \"x\"}\n"
      "\n"
      "{\"a\": \"y\", \"m\": true, \"z\": 2.5}\r\n"
      "{\"z\": null}\n",
      "t.jsonl");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns, ElementsAre("z", "a", "m"));
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_THAT(table->rows[0], ElementsAre("1", "x", ""));
  EXPECT_THAT(table->rows[1], ElementsAre("2.5", "y", "true"));
  EXPECT_THAT(table->rows[2], ElementsAre("", "", ""));
  EXPECT_THAT(table->lines, ElementsAre(1, 3, 4));
}

TEST(ParseJsonLinesTest, ArraysBecomeIndexedColumns) {
  absl::StatusOr<Table> table =
      ParseJsonLines("{\"x\": [0.5, -1, 2e3], \"label\": \"cat\"}\n", "t.jsonl");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns, ElementsAre("x[0]", "x[1]", "x[2]", "label"));
  EXPECT_THAT(table->rows[0], ElementsAre("0.5", "-1", "2000.0", "cat"));
}

TEST(ParseJsonLinesTest, ErrorsNameTheLine) {
  EXPECT_THAT(ParseJsonLines("{\"a\": 1}\n{\"a\": \n", "t.jsonl").status().message(),
              Begins("t.jsonl:2: not valid JSON"));
  EXPECT_THAT(ParseJsonLines("[1, 2]\n", "t.jsonl").status().message(),
              Begins("t.jsonl:1: expected a JSON object"));
  EXPECT_THAT(ParseJsonLines("{\"a\": {\"b\": 1}}\n", "t.jsonl").status().message(),
              Begins("t.jsonl:1: \"a\": nested objects"));
  EXPECT_THAT(ParseJsonLines("{\"a\": [[1]]}\n", "t.jsonl").status().message(),
              Begins("t.jsonl:1: \"a\": nested values"));
}

TEST(FormatJsonLinesTest, NumbersStringsAndNulls) {
  OutputTable table;
  table.columns = {"id", "label", "score"};
  table.rows.push_back({Cell(std::string("r\"1")), Cell(std::string("cat")), Cell(0.25f)});
  table.rows.push_back({Cell(std::string("r2")), Cell(), Cell()});
  EXPECT_EQ(FormatJsonLines(table),
            "{\"id\":\"r\\\"1\",\"label\":\"cat\",\"score\":0.25}\n"
            "{\"id\":\"r2\",\"label\":null,\"score\":null}\n");
}

TEST(FormatJsonLinesTest, RoundTripsThroughTheReader) {
  OutputTable out;
  out.columns = {"y0", "y1"};
  out.rows.push_back({Cell(1.5f), Cell(-0.1f)});
  absl::StatusOr<Table> table = ParseJsonLines(FormatJsonLines(out), "t.jsonl");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->columns, ElementsAre("y0", "y1"));
  EXPECT_THAT(table->rows[0], ElementsAre("1.5", "-0.1"));
}

}  // namespace
}  // namespace adaptctl
