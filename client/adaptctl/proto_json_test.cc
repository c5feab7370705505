#include "client/adaptctl/proto_json.h"

#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

TEST(MessageToJsonTest, StoreInfo) {
  adapt::v1::StoreInfo info;
  info.set_tenant("acme");
  info.set_store("s1");
  info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  info.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  info.mutable_spec()->mutable_faast()->set_rcond(0.001);
  info.set_version(18446744073709551615ull);
  info.add_labels("a");
  info.mutable_faast()->set_solver("spectral");
  const Json json = MessageToJson(info);
  EXPECT_EQ(json["tenant"], "acme");
  EXPECT_EQ(json["version"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_TRUE(json["version"].is_number_unsigned());
  EXPECT_EQ(json["examples"], 0);
  EXPECT_EQ(json["labels"], Json::array({"a"}));
  EXPECT_EQ(json["spec"]["kind"], "STORE_KIND_FAAST");
  EXPECT_EQ(json["spec"]["output"]["kind"], "KIND_LABELS");
  EXPECT_EQ(json["spec"]["faast"]["rcond"], 0.001);
  // Unset optional fields and oneof members are left out.
  EXPECT_FALSE(json["spec"]["faast"].contains("alpha"));
  EXPECT_FALSE(json["spec"].contains("falcon"));
  EXPECT_EQ(json["faast"]["solver"], "spectral");
  EXPECT_EQ(json["faast"]["effective_rank"], 0);
}

TEST(MessageToJsonTest, FloatsPrintShortAndBytesAsBase64) {
  adapt::v1::LabelScore score;
  score.set_label("x");
  score.set_score(0.1f);
  EXPECT_EQ(MessageToJson(score).dump(), "{\"label\":\"x\",\"score\":0.1}");
  adapt::v1::StoreChunk chunk;
  chunk.set_data("hi");
  EXPECT_EQ(MessageToJson(chunk)["data"], "aGk=");
}

}  // namespace
}  // namespace adaptctl
