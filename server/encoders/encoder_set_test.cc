#include "server/encoders/encoder_set.h"

#include "gtest/gtest.h"
#include "server/encoders/fingerprint.h"

namespace adaptd {
namespace {

google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> Configs() {
  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  auto* identity = configs.Add();
  identity->set_name("identity");
  identity->set_type("identity");
  auto* text = configs.Add();
  text->set_name("text");
  text->set_type("hashed_ngrams");
  text->set_dim(256);
  auto* rff = configs.Add();
  rff->set_name("rff");
  rff->set_type("random_features");
  rff->set_dim(32);
  rff->set_input_dim(4);
  rff->set_gamma(0.5);
  return configs;
}

TEST(EncoderSetTest, BuildsEveryTypeAndListsThem) {
  auto set = EncoderSet::Create(Configs());
  ASSERT_TRUE(set.ok()) << set.status();
  const auto list = (*set)->List();
  ASSERT_EQ(list.encoders_size(), 3);
  for (const auto& info : list.encoders()) {
    EXPECT_FALSE(info.fingerprint().empty()) << info.name();
    if (info.name() == "text") {
      EXPECT_EQ(info.type(), "hashed_ngrams");
      EXPECT_EQ(info.input_kind(), "text");
      EXPECT_EQ(info.dim(), 256u);
      EXPECT_EQ(info.fingerprint().substr(0, 14), "hashed_ngrams:");
    } else if (info.name() == "rff") {
      EXPECT_EQ(info.input_kind(), "vector");
      EXPECT_EQ(info.dim(), 32u);
    }
  }
}

TEST(EncoderSetTest, ConfigErrorsNameTheEntry) {
  auto configs = Configs();
  configs[2].set_type("no_such_type");
  auto s = EncoderSet::Create(configs).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 40), "encoders[2].type: unknown encoder type '") << s;
  configs = Configs();
  configs[2].set_gamma(0);
  EXPECT_EQ(EncoderSet::Create(configs).status().message().substr(0, 18), "encoders[2].gamma:");
  configs = Configs();
  auto* ft = configs.Add();
  ft->set_name("ft");
  ft->set_type("fasttext");
  ft->set_model_path("/nonexistent/model.bin");
  s = EncoderSet::Create(configs).status();
  EXPECT_EQ(s.message(),
            "encoders[3].model_path: fasttext encoder 'ft' cannot load '/nonexistent/model.bin': "
            "no such file");
}

adapt::v1::StoreSpec FaastSpec(const std::string& encoder) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder(encoder);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  return spec;
}

TEST(EncoderSetTest, BindsAndChecksFingerprints) {
  auto set = EncoderSet::Create(Configs());
  ASSERT_TRUE(set.ok());
  adapt::v1::StoreSpec spec = FaastSpec("text");
  ASSERT_TRUE((*set)->BindToSpec(&spec).ok());
  EXPECT_EQ(spec.encoder_fingerprint(), (*set)->Find("text")->fingerprint());
  EXPECT_TRUE((*set)->ForStore(spec).ok());

  // The same name served with other parameters: a different fingerprint.
  auto changed = Configs();
  changed[1].set_dim(512);
  auto other = EncoderSet::Create(changed);
  ASSERT_TRUE(other.ok());
  absl::Status s = (*other)->ForStore(spec).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'text'"), std::string::npos) << s;
  EXPECT_NE(s.message().find(spec.encoder_fingerprint()), std::string::npos) << s;
  EXPECT_NE(s.message().find((*other)->Find("text")->fingerprint()), std::string::npos) << s;
  EXPECT_EQ(CheckEncoderFingerprint(spec, *(*other)->Find("text")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(CheckEncoderFingerprint(spec, *(*set)->Find("text")).ok());
  adapt::v1::StoreSpec pinned = FaastSpec("text");
  pinned.set_encoder_fingerprint("hashed_ngrams:0000000000000000");
  EXPECT_EQ((*set)->BindToSpec(&pinned).code(), absl::StatusCode::kFailedPrecondition);
  adapt::v1::StoreSpec legacy = FaastSpec("text");  // recorded none: not checked
  EXPECT_TRUE((*other)->ForStore(legacy).ok());
  adapt::v1::StoreSpec gone = FaastSpec("missing");
  EXPECT_EQ((*set)->ForStore(gone).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(EncoderSetTest, LabelEncoderMustBeAHostedTextEncoder) {
  auto set = EncoderSet::Create(Configs());
  ASSERT_TRUE(set.ok());
  adapt::v1::StoreSpec spec = FaastSpec("rff");
  spec.mutable_output()->set_label_encoder("text");
  ASSERT_TRUE((*set)->BindToSpec(&spec).ok());
  EXPECT_EQ(spec.output().label_dim(), 256u);
  EXPECT_EQ(spec.output().label_encoder_fingerprint(), (*set)->Find("text")->fingerprint());
  auto label_encoder = (*set)->LabelEncoderForStore(spec);
  ASSERT_TRUE(label_encoder.ok());
  EXPECT_EQ(*label_encoder, (*set)->Find("text"));

  for (const auto& [name, reason] :
       std::vector<std::pair<std::string, std::string>>{{"nope", "unknown encoder 'nope'"},
                                                        {"identity", "takes vectors"},
                                                        {"rff", "takes vectors"}}) {
    adapt::v1::StoreSpec bad = FaastSpec("rff");
    bad.mutable_output()->set_label_encoder(name);
    absl::Status s = (*set)->BindToSpec(&bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(s.message().substr(0, 26), "spec.output.label_encoder:") << s;
    EXPECT_NE(s.message().find(reason), std::string::npos) << s;
  }
  adapt::v1::StoreSpec falcon = FaastSpec("rff");
  falcon.set_kind(adapt::v1::STORE_KIND_FALCON);
  falcon.mutable_output()->set_label_encoder("text");
  EXPECT_EQ((*set)->BindToSpec(&falcon).code(), absl::StatusCode::kInvalidArgument);
  adapt::v1::StoreSpec vector_output = FaastSpec("rff");
  vector_output.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  vector_output.mutable_output()->set_label_encoder("text");
  EXPECT_EQ((*set)->BindToSpec(&vector_output).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
