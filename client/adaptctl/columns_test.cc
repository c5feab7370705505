#include "client/adaptctl/columns.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/adaptctl/csv.h"
#include "client/adaptctl/jsonl.h"
#include "client/adaptctl/test_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

using adapt::v1::OutputSpec;
using ::testing::ElementsAre;

Table Csv(const std::string& text) {
  absl::StatusOr<Table> table = ParseCsv(text, "d.csv");
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *table : Table();
}

OutputSpec Labels() {
  OutputSpec output;
  output.set_kind(OutputSpec::KIND_LABELS);
  return output;
}

OutputSpec Vector(uint32_t dim) {
  OutputSpec output;
  output.set_kind(OutputSpec::KIND_VECTOR);
  output.set_dim(dim);
  return output;
}

TEST(SelectColumnsTest, FeaturesAreTheOtherNumericColumnsInFileOrder) {
  Table table = Csv("x2,id,name,label,x1,x0\n1,a,bob,cat,2,3\n4,b,al,dog,5,6\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_EQ(selection->id, 1);
  EXPECT_EQ(selection->label, 3);
  EXPECT_EQ(selection->target, TargetKind::kLabel);
  EXPECT_THAT(selection->features, ElementsAre(0, 4, 5));
}

TEST(SelectColumnsTest, NumericLabelsAreNotFeatures) {
  Table table = Csv("f0,f1,label\n1,2,0\n3,4,1\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_THAT(selection->features, ElementsAre(0, 1));
}

TEST(SelectColumnsTest, FirstNonEmptyValueDecidesNumeric) {
  Table table = Csv("a,b,label\n,x,c\n2,y,d\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_THAT(selection->features, ElementsAre(0));
  // The empty first value of `a` is then a missing value.
  EXPECT_THAT(BuildExamples(table, *selection).status().message(),
              Begins("d.csv:2: column \"a\": missing value"));
}

TEST(SelectColumnsTest, NamedLabelColumn) {
  Table table = Csv("f,class\n1,a\n");
  ColumnOptions options;
  options.label_col = "class";
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, options, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_EQ(selection->label, 1);
  EXPECT_THAT(selection->features, ElementsAre(0));
  options.label_col = "nope";
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Labels(), true).status().message(),
              Begins("d.csv: no column \"nope\""));
}

TEST(SelectColumnsTest, LabelStoreNeedsALabelColumn) {
  Table table = Csv("f,g\n1,2\n");
  EXPECT_THAT(SelectColumns(table, {}, InputKind::kVector, Labels(), true).status().message(),
              Begins("d.csv: no \"label\" column; name the label column with --label-col"));
  // predict needs none.
  EXPECT_TRUE(SelectColumns(table, {}, InputKind::kVector, Labels(), false).ok());
}

TEST(SelectColumnsTest, PredictSkipsTheLabelColumn) {
  Table table = Csv("id,f,label\n7,1,3\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), false);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_EQ(selection->target, TargetKind::kNone);
  EXPECT_THAT(selection->features, ElementsAre(1));
}

TEST(SelectColumnsTest, VectorTargets) {
  Table table = Csv("a,b,t1,t0\n1,2,3,4\n");
  ColumnOptions options;
  options.target_cols = {"t0", "t1"};
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, options, InputKind::kVector, Vector(2), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_EQ(selection->target, TargetKind::kVector);
  EXPECT_THAT(selection->targets, ElementsAre(3, 2));
  EXPECT_THAT(selection->features, ElementsAre(0, 1));
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(table, *selection);
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_THAT((*examples)[0].vector().values(), ElementsAre(4.0f, 3.0f));
  EXPECT_THAT((*examples)[0].input().vector().values(), ElementsAre(1.0f, 2.0f));
}

TEST(SelectColumnsTest, VectorTargetsDefaultToYColumns) {
  Table table = Csv("x,y1,y0\n1,2,3\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Vector(2), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_THAT(selection->targets, ElementsAre(2, 1));
  EXPECT_THAT(selection->features, ElementsAre(0));
}

TEST(SelectColumnsTest, VectorTargetsFromJsonArrays) {
  absl::StatusOr<Table> table = ParseJsonLines("{\"x\": [1, 2, 3], \"y\": [4, 5]}\n", "d.jsonl");
  ASSERT_TRUE(table.ok()) << table.status();
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(*table, {}, InputKind::kVector, Vector(2), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_THAT(selection->targets, ElementsAre(3, 4));
  EXPECT_THAT(selection->features, ElementsAre(0, 1, 2));
  ColumnOptions options;
  options.target_cols = {"x"};
  selection = SelectColumns(*table, options, InputKind::kVector, Vector(3), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_THAT(selection->targets, ElementsAre(0, 1, 2));
  EXPECT_THAT(selection->features, ElementsAre(3, 4));
}

TEST(SelectColumnsTest, VectorTargetErrors) {
  Table table = Csv("a,b,c\n1,2,3\n");
  EXPECT_THAT(SelectColumns(table, {}, InputKind::kVector, Vector(2), true).status().message(),
              Begins("d.csv: no target columns: name the 2 columns of this vector:2 store with "
                     "--target-cols"));
  ColumnOptions options;
  options.target_cols = {"b"};
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Vector(2), true).status().message(),
              Begins("d.csv: --target-cols names 1 columns; the store's output is vector:2"));
  options.target_cols = {"zz"};
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Vector(1), true).status().message(),
              Begins("d.csv: no column \"zz\""));
  options.target_cols = {"b"};
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Labels(), true).status().message(),
              Begins("d.csv: --target-cols applies to vector stores"));
  ColumnOptions label;
  label.label_col = "c";
  EXPECT_THAT(SelectColumns(table, label, InputKind::kVector, Vector(1), true).status().message(),
              Begins("d.csv: --label-col applies to label stores"));
}

TEST(SelectColumnsTest, TextInput) {
  Table table = Csv("id,body,label\n1,\"hello, there\",greet\n");
  ColumnOptions options;
  EXPECT_THAT(SelectColumns(table, options, InputKind::kText, Labels(), true).status().message(),
              Begins("d.csv: no text column \"text\""));
  options.text_col = "body";
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, options, InputKind::kText, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(table, *selection);
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_EQ((*examples)[0].input().text(), "hello, there");
  EXPECT_EQ((*examples)[0].label(), "greet");
  EXPECT_EQ((*examples)[0].id(), "1");
  // A vector encoder has no text column to name.
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Labels(), true).status().message(),
              Begins("d.csv: --text-col applies to text encoders"));
}

TEST(SelectColumnsTest, ImageInputReadsTheFilesRelativeToTheTable) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "adaptctl_images";
  std::filesystem::create_directories(dir / "pics");
  std::ofstream(dir / "pics" / "a.png", std::ios::binary) << std::string("\x89PNG\0a", 6);
  std::ofstream(dir / "b.jpg", std::ios::binary) << "\xff\xd8\xffb";
  Table table = Csv("id,photo,label,size\n1,pics/a.png,cat,3\n2," + (dir / "b.jpg").string() +
                    ",dog,4\n3,missing.png,cat,5\n");
  table.source = (dir / "d.csv").string();
  ColumnOptions options;
  EXPECT_THAT(SelectColumns(table, options, InputKind::kImage, Labels(), true).status().message(),
              Begins(table.source + ": no image column \"image\"; name it with --image-col"));
  options.image_col = "photo";
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, options, InputKind::kImage, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_TRUE(selection->features.empty());
  absl::StatusOr<adapt::v1::Input> a = RowInput(table, *selection, 0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->image(), std::string("\x89PNG\0a", 6));
  absl::StatusOr<adapt::v1::Input> b = RowInput(table, *selection, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->image(), "\xff\xd8\xffb");
  absl::Status missing = BuildExamples(table, *selection).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(),
              Begins(table.source + ":4: column \"photo\": cannot read image file '" +
                     (dir / "missing.png").string() + "'"));
  // A vector encoder has no image column to name, and takes no paths for features.
  EXPECT_THAT(SelectColumns(table, options, InputKind::kVector, Labels(), true).status().message(),
              Begins(table.source + ": --image-col applies to image encoders"));
}

TEST(SelectColumnsTest, NoFeaturesIsAnError) {
  Table table = Csv("name,label\nbob,a\n");
  EXPECT_THAT(SelectColumns(table, {}, InputKind::kVector, Labels(), true).status().message(),
              Begins("d.csv: no numeric feature columns"));
}

TEST(BuildExamplesTest, NonNumericFeatureNamesLineAndColumn) {
  Table table = Csv("f0,f1,label\n1,2,a\n3,4,b\n5,oops,c\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  absl::Status status = BuildExamples(table, *selection).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), Begins("d.csv:4: column \"f1\": not a number: \"oops\""));
}

TEST(BuildExamplesTest, LabelsIdsAndNumbers) {
  Table table = Csv("id,f0,f1,label\nr1, 1.5 ,+2e-1,cat\n,-3,4,dog\n");
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, Labels(), true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(table, *selection);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 2u);
  EXPECT_THAT((*examples)[0].input().vector().values(), ElementsAre(1.5f, 0.2f));
  EXPECT_EQ((*examples)[0].label(), "cat");
  EXPECT_EQ((*examples)[0].id(), "r1");
  EXPECT_EQ((*examples)[1].id(), "");
  EXPECT_EQ((*examples)[1].label(), "dog");
}

TEST(SelectColumnsTest, SequenceColumnIsARoleNotAFeature) {
  Table table = Csv("session,f0,f1\n1,0.5,2\n1,1.5,3\n2,4,5\n");
  OutputSpec next;
  next.set_kind(OutputSpec::KIND_NEXT);
  ColumnOptions options;
  options.sequence_col = "session";
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, options, InputKind::kVector, next, true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_EQ(selection->sequence, 0);
  EXPECT_EQ(selection->features, (std::vector<int>{1, 2}));
  options.sequence_col = "user";
  absl::StatusOr<ColumnSelection> missing =
      SelectColumns(table, options, InputKind::kVector, next, true);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("no column \"user\" (--sequence-col)"),
            std::string::npos)
      << missing.status();
}

TEST(BuildExamplesTest, NextStoreExamplesHaveNoTarget) {
  Table table = Csv("f0,label\n1,a\n");
  OutputSpec next;
  next.set_kind(OutputSpec::KIND_NEXT);
  absl::StatusOr<ColumnSelection> selection =
      SelectColumns(table, {}, InputKind::kVector, next, true);
  ASSERT_TRUE(selection.ok()) << selection.status();
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(table, *selection);
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_EQ((*examples)[0].target_case(), adapt::v1::Example::TARGET_NOT_SET);
}

}  // namespace
}  // namespace adaptctl
