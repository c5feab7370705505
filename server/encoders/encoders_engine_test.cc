// The encoders inside the engine: text stores end to end with bad inputs, the fingerprint
// check after a config change (restart on the same data directory, and import), and FAAST's
// label-embedding mode against a float64 reference.
#include <cmath>
#include <filesystem>
#include <future>
#include <random>

#include "gtest/gtest.h"
#include "server/core/engine.h"
#include "server/encoders/hashed_ngrams_encoder.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_snapshot.h"

namespace adaptd {
namespace {

using adapt::v1::Example;
using google::protobuf::RepeatedPtrField;

adapt::v1::EncoderConfig TextEncoderConfig(uint32_t dim, uint32_t char_max = 5) {
  adapt::v1::EncoderConfig config;
  config.set_name("text");
  config.set_type("hashed_ngrams");
  config.set_dim(dim);
  config.set_char_ngram_max(char_max);
  return config;
}

adapt::v1::ServerConfig Config(const std::string& data_dir, uint32_t text_dim = 64,
                               uint32_t char_max = 5) {
  adapt::v1::ServerConfig config;
  config.set_data_dir(data_dir);
  auto* identity = config.add_encoders();
  identity->set_name("identity");
  identity->set_type("identity");
  *config.add_encoders() = TextEncoderConfig(text_dim, char_max);
  return config;
}

adapt::v1::CreateStoreRequest TextStore(const std::string& name) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("acme");
  create.set_store(name);
  auto* spec = create.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FAAST);
  spec->set_encoder("text");
  spec->mutable_faast()->set_ridge(0.1);
  spec->mutable_faast()->set_auto_compile_every(0);
  spec->mutable_faast()->set_auto_compile_delay_ms(0);
  return create;
}

RepeatedPtrField<Example> TextExamples(const std::vector<std::pair<std::string, std::string>>& e) {
  RepeatedPtrField<Example> out;
  for (const auto& [text, label] : e) {
    Example* x = out.Add();
    x->mutable_input()->set_text(text);
    x->set_label(label);
  }
  return out;
}

absl::Status Adapt(Engine& engine, const std::string& store, const RepeatedPtrField<Example>& e) {
  auto session = engine.StartWrite(TxnKind::kAdapt);
  if (absl::Status s = session->Add("acme", store, e); !s.ok()) return s;
  return session->Finish().status();
}

absl::StatusOr<adapt::v1::CompileResponse> Compile(Engine& engine, const std::string& store) {
  adapt::v1::CompileRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  std::promise<absl::StatusOr<adapt::v1::CompileResponse>> done;
  engine.Compile(
      request, [&](absl::StatusOr<adapt::v1::CompileResponse> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

absl::StatusOr<adapt::v1::PredictResponse> PredictTexts(Engine& engine, const std::string& store,
                                                        const std::vector<std::string>& texts,
                                                        uint32_t top_k = 1) {
  adapt::v1::PredictRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  request.set_top_k(top_k);
  for (const auto& t : texts) request.add_inputs()->set_text(t);
  return engine.Predict(request);
}

class EncodersEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/encoders_engine_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    backend_ = kernels::MakeCpuBackend(1);
  }
  std::string dir_;
  std::unique_ptr<kernels::Backend> backend_;
};

const std::vector<std::pair<std::string, std::string>> kTraining = {
    {"the striker scored a late goal", "sports"}, {"the match ended in a draw", "sports"},
    {"heavy rain and wind tomorrow", "weather"},  {"sunny skies all weekend", "weather"},
    {"stocks fell on the news", "markets"},       {"the index closed higher", "markets"}};

TEST_F(EncodersEngineTest, TextStoreRejectsBadInputsAndStaysUnchanged) {
  auto engine = Engine::Create(Config(""), backend_.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->CreateStore(TextStore("news")).ok());
  ASSERT_TRUE(Adapt(**engine, "news", TextExamples(kTraining)).ok());
  ASSERT_TRUE(Compile(**engine, "news").ok());
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("news");
  const auto before = (*engine)->GetStore(get);
  ASSERT_TRUE(before.ok());

  auto bad = TextExamples({{"fine text", "sports"}, {"bad \xc3\x28 text", "sports"}});
  absl::Status s = Adapt(**engine, "news", bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].input.text: not valid UTF-8");
  bad = TextExamples({{"fine", "sports"}, {"", "sports"}});
  s = Adapt(**engine, "news", bad);
  EXPECT_EQ(s.message(), "examples[1].input.text: empty");
  bad = TextExamples({{"x", "sports"}});
  bad[0].mutable_input()->mutable_vector()->add_values(1.0f);
  s = Adapt(**engine, "news", bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input.vector: encoder 'text' takes text, not a vector");
  bad = TextExamples({{"fine", "sports"}, {"x", "sports"}});
  bad[1].mutable_input()->set_image("\x89PNG\r\n\x1a\n");
  s = Adapt(**engine, "news", bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].input.image: encoder 'text' takes text, not an image");
  auto predicted = PredictTexts(**engine, "news", {"ok", ""});
  EXPECT_EQ(predicted.status().message(), "inputs[1].text: empty");

  const auto after = (*engine)->GetStore(get);
  EXPECT_EQ(after->examples(), before->examples());
  EXPECT_EQ(after->version(), before->version());
  EXPECT_EQ(after->faast().pending_examples(), 0u);

  predicted = PredictTexts(**engine, "news", {"a goal in the match", "rain and wind"});
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->predictions(0).labels(0).label(), "sports");
  EXPECT_EQ(predicted->predictions(1).labels(0).label(), "weather");
  EXPECT_EQ(after->spec().encoder_fingerprint(),
            (*engine)->ListEncoders().encoders(1).fingerprint());
}

TEST_F(EncodersEngineTest, ChangedEncoderStopsTheStoreAfterRestart) {
  {
    auto engine = Engine::Create(Config(dir_), backend_.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    ASSERT_TRUE((*engine)->CreateStore(TextStore("news")).ok());
    ASSERT_TRUE(Adapt(**engine, "news", TextExamples(kTraining)).ok());
    ASSERT_TRUE(Compile(**engine, "news").ok());
  }
  // Same name and dimension, other parameters: another fingerprint.
  auto engine = Engine::Create(Config(dir_, 64, 4), backend_.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const std::string now = (*engine)->ListEncoders().encoders(1).fingerprint();
  auto check = [&](const absl::Status& s, const char* what) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << what << ": " << s;
    EXPECT_NE(s.message().find("'text'"), std::string::npos) << what << ": " << s;
    EXPECT_NE(s.message().find(now), std::string::npos) << what << ": " << s;
  };
  check(Adapt(**engine, "news", TextExamples({{"more text", "sports"}})), "adapt");
  check(PredictTexts(**engine, "news", {"a goal"}).status(), "predict");
  check(Compile(**engine, "news").status(), "compile");
  engine->reset();
  // Back to the original encoder: the store serves again.
  auto original = Engine::Create(Config(dir_), backend_.get(), nullptr);
  ASSERT_TRUE(original.ok());
  EXPECT_TRUE(PredictTexts(**original, "news", {"a goal"}).ok());
}

TEST_F(EncodersEngineTest, ImportChecksTheFingerprint) {
  auto engine = Engine::Create(Config(""), backend_.get(), nullptr);
  ASSERT_TRUE((*engine)->CreateStore(TextStore("news")).ok());
  ASSERT_TRUE(Adapt(**engine, "news", TextExamples(kTraining)).ok());
  adapt::v1::ExportStoreRequest request;
  request.set_tenant("acme");
  request.set_store("news");
  auto file = (*engine)->Export(request);
  ASSERT_TRUE(file.ok());
  const std::string recorded = (*engine)->ListEncoders().encoders(1).fingerprint();

  auto other = Engine::Create(Config("", 64, 4), backend_.get(), nullptr);
  absl::Status s = (*other)->Import("acme", "news", *file).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(recorded), std::string::npos) << s;
  EXPECT_NE(s.message().find((*other)->ListEncoders().encoders(1).fingerprint()), std::string::npos)
      << s;
  auto same = Engine::Create(Config(""), backend_.get(), nullptr);
  EXPECT_TRUE((*same)->Import("acme", "news", *file).ok());
}

// Label-embedding mode: keys from `identity`, label names embedded by `text`. Reference in
// float64: S = (KᵀK + ridge·I)⁻¹ KᵀE with E the label embeddings of the examples; a query q
// scores label l by cos(qS, e_l).
TEST_F(EncodersEngineTest, LabelEmbeddingModeMatchesAFloat64Reference) {
  constexpr int kD = 6, kN = 40;
  constexpr double kRidge = 0.5;
  auto engine = Engine::Create(Config("", 32), backend_.get(), nullptr);
  ASSERT_TRUE(engine.ok());
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("acme");
  create.set_store("emb");
  auto* spec = create.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FAAST);
  spec->set_encoder("identity");
  spec->set_dim(kD);
  spec->mutable_output()->set_label_encoder("nope");
  spec->mutable_faast()->set_ridge(kRidge);
  spec->mutable_faast()->set_auto_compile_every(0);
  spec->mutable_faast()->set_auto_compile_delay_ms(0);
  absl::Status s = (*engine)->CreateStore(create).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 26), "spec.output.label_encoder:") << s;
  spec->mutable_output()->set_label_encoder("identity");
  s = (*engine)->CreateStore(create).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 26), "spec.output.label_encoder:") << s;
  spec->mutable_output()->set_label_encoder("text");
  auto created = (*engine)->CreateStore(create);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->spec().output().label_dim(), 32u);

  const std::vector<std::string> names = {"sports news", "weather report", "stock markets",
                                          "cooking recipes"};
  // The label embeddings, from the encoder itself (its own tests check it).
  auto text_encoder = HashedNgramsEncoder::Create(TextEncoderConfig(32), "encoders[1]");
  std::vector<std::vector<double>> emb;
  for (const auto& name : names) {
    adapt::v1::Input input;
    input.set_text(name);
    auto e = (*text_encoder)->Encode({&input}, 0, 1 << 20, [](size_t) { return "x"; });
    emb.emplace_back(e->keys.begin(), e->keys.end());
  }
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0, 1);
  std::vector<std::vector<double>> centers(names.size(), std::vector<double>(kD));
  for (auto& c : centers) {
    for (double& v : c) v = 2 * normal(rng);
  }
  std::vector<double> k(kN * kD);
  std::vector<int> label_of(kN);
  RepeatedPtrField<Example> examples;
  for (int i = 0; i < kN; ++i) {
    label_of[i] = i % static_cast<int>(names.size());
    Example* e = examples.Add();
    e->set_label(names[label_of[i]]);
    for (int j = 0; j < kD; ++j) {
      const float v = static_cast<float>(centers[label_of[i]][j] + 0.5 * normal(rng));
      k[i * kD + j] = v;
      e->mutable_input()->mutable_vector()->add_values(v);
    }
  }
  ASSERT_TRUE(Adapt(**engine, "emb", examples).ok());
  ASSERT_TRUE(Compile(**engine, "emb").ok());

  // Reference S by Gaussian elimination on (KᵀK + ridge I) S = KᵀE.
  const int p = 32;
  std::vector<double> a(kD * kD, 0.0), c(kD * p, 0.0);
  for (int i = 0; i < kN; ++i) {
    for (int r = 0; r < kD; ++r) {
      for (int q = 0; q < kD; ++q) a[r * kD + q] += k[i * kD + r] * k[i * kD + q];
      for (int q = 0; q < p; ++q) c[r * p + q] += k[i * kD + r] * emb[label_of[i]][q];
    }
  }
  for (int r = 0; r < kD; ++r) a[r * kD + r] += kRidge;
  for (int col = 0; col < kD; ++col) {
    for (int r = col + 1; r < kD; ++r) {
      const double f = a[r * kD + col] / a[col * kD + col];
      for (int q = 0; q < kD; ++q) a[r * kD + q] -= f * a[col * kD + q];
      for (int q = 0; q < p; ++q) c[r * p + q] -= f * c[col * p + q];
    }
  }
  std::vector<double> sol(kD * p);
  for (int r = kD - 1; r >= 0; --r) {
    for (int q = 0; q < p; ++q) {
      double v = c[r * p + q];
      for (int t = r + 1; t < kD; ++t) v -= a[r * kD + t] * sol[t * p + q];
      sol[r * p + q] = v / a[r * kD + r];
    }
  }

  adapt::v1::PredictRequest request;
  request.set_tenant("acme");
  request.set_store("emb");
  request.set_top_k(4);
  std::vector<std::vector<double>> queries;
  for (int i = 0; i < 8; ++i) {
    std::vector<double> q(kD);
    for (int j = 0; j < kD; ++j) q[j] = static_cast<float>(centers[i % 4][j] + normal(rng));
    auto* input = request.add_inputs()->mutable_vector();
    for (double v : q) input->add_values(static_cast<float>(v));
    queries.push_back(q);
  }
  auto predicted = (*engine)->Predict(request);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  int correct = 0;
  for (int i = 0; i < 8; ++i) {
    std::vector<double> y(p, 0.0);
    for (int j = 0; j < kD; ++j) {
      for (int q = 0; q < p; ++q) y[q] += queries[i][j] * sol[j * p + q];
    }
    double ny = 0;
    for (double v : y) ny += v * v;
    std::vector<std::pair<double, std::string>> want;
    for (size_t l = 0; l < names.size(); ++l) {
      double dot = 0, ne = 0;
      for (int q = 0; q < p; ++q) dot += y[q] * emb[l][q], ne += emb[l][q] * emb[l][q];
      want.emplace_back(dot / std::sqrt(ny * ne), names[l]);
    }
    std::sort(want.begin(), want.end(), [](auto& x, auto& z) { return x.first > z.first; });
    const auto& got = predicted->predictions(i);
    ASSERT_EQ(got.labels_size(), 4);
    for (int r = 0; r < 4; ++r) {
      EXPECT_NEAR(got.labels(r).score(), want[r].first, 1e-5) << i << "," << r;
      if (r == 0 || want[r].first < want[r - 1].first - 1e-5) {
        EXPECT_EQ(got.labels(r).label(), want[r].second) << i << "," << r;
      }
    }
    correct += got.labels(0).label() == names[i % 4];
  }
  EXPECT_GE(correct, 6);

  // The embeddings travel with the snapshot.
  adapt::v1::ExportStoreRequest exported;
  exported.set_tenant("acme");
  exported.set_store("emb");
  auto file = (*engine)->Export(exported);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*engine)->Import("acme", "emb2", *file).ok());
  request.set_store("emb2");
  auto again = (*engine)->Predict(request);
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < 8; ++i) {
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(again->predictions(i).labels(r).label(),
                predicted->predictions(i).labels(r).label());
      EXPECT_NEAR(again->predictions(i).labels(r).score(),
                  predicted->predictions(i).labels(r).score(), 1e-6);
    }
  }

  // Forget: a known label works, an unknown one is refused.
  auto session = (*engine)->StartWrite(TxnKind::kForget);
  RepeatedPtrField<Example> forget;
  *forget.Add() = examples[0];
  ASSERT_TRUE(session->Add("acme", "emb", forget).ok());
  EXPECT_TRUE(session->Finish().ok());
  session = (*engine)->StartWrite(TxnKind::kForget);
  forget[0].set_label("never seen");
  EXPECT_FALSE(session->Add("acme", "emb", forget).ok() && session->Finish().ok());
}

// Declared labels: embedded when the store is created, so it answers at once (zero-shot,
// the text itself decoded against the label texts), durably: a restart finds the store as it
// was acknowledged. Examples then move the read-out by r = N / (N₀ + N).
TEST_F(EncodersEngineTest, DeclaredLabelsAnswerZeroShotFromCreationAndAfterARestart) {
  adapt::v1::CreateStoreRequest create = TextStore("zs");
  auto* spec = create.mutable_spec();
  spec->mutable_output()->set_label_encoder("text");
  for (const char* name : {"sports", "weather", "markets"})
    spec->mutable_output()->add_labels(name);
  spec->mutable_faast()->set_prior_examples(6);
  {
    auto engine = Engine::Create(Config(dir_), backend_.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    auto created = (*engine)->CreateStore(create);
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ(created->version(), 1u);
    EXPECT_EQ(created->labels_size(), 3);
    EXPECT_EQ(created->faast().solver(), "zero_shot");
    auto predicted = PredictTexts(**engine, "zs", {"weather", "markets", "sports"});
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    EXPECT_EQ(predicted->predictions(0).labels(0).label(), "weather");
    EXPECT_EQ(predicted->predictions(1).labels(0).label(), "markets");
    EXPECT_EQ(predicted->predictions(2).labels(0).label(), "sports");
    EXPECT_NEAR(predicted->predictions(0).labels(0).score(), 1.0, 1e-5);
    // Declared labels need a label encoder of the keys' width (here: another width).
    adapt::v1::CreateStoreRequest bad = create;
    bad.set_store("bad");
    bad.mutable_spec()->set_encoder("identity");
    bad.mutable_spec()->set_dim(5);
    absl::Status s = (*engine)->CreateStore(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().substr(0, 28), "spec.faast.prior_examples: n") << s;
  }
  auto engine = Engine::Create(Config(dir_), backend_.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto predicted = PredictTexts(**engine, "zs", {"weather"});
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->predictions(0).labels(0).label(), "weather");
  ASSERT_TRUE(Adapt(**engine, "zs", TextExamples(kTraining)).ok());
  auto compiled = Compile(**engine, "zs");
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_NEAR(compiled->faast().fast_weight_share(), 6.0 / 12.0, 1e-12);
  predicted = PredictTexts(**engine, "zs", {"a goal in the match", "rain and wind"});
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->predictions(0).labels(0).label(), "sports");
  EXPECT_EQ(predicted->predictions(1).labels(0).label(), "weather");
}

TEST(FaastLabelEmbeddingSnapshotTest, RejectsInconsistentLabelVectors) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.mutable_output()->set_label_encoder("text");
  spec.mutable_output()->set_label_dim(4);
  auto normalized = NormalizeFaastSpec(spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  adapt::v1::FaastState state;
  state.set_dim(0);
  state.set_columns(4);
  state.add_labels("a");
  for (int i = 0; i < 4; ++i) state.add_label_vectors(0.5f);
  FaastPersistent out;
  EXPECT_TRUE(FaastStateFromProto(state, *normalized, &out).ok());
  EXPECT_EQ(out.label_vectors.size(), 4u);

  state.add_label_vectors(1.0f);
  absl::Status s = FaastStateFromProto(state, *normalized, &out);
  EXPECT_EQ(s.message(), "snapshot.faast.label_vectors: has 5 entries, expected 4");
  state.mutable_label_vectors()->RemoveLast();
  state.set_columns(3);
  EXPECT_EQ(FaastStateFromProto(state, *normalized, &out).message().substr(0, 23),
            "snapshot.faast.columns:");
  adapt::v1::StoreSpec plain = *normalized;
  plain.mutable_output()->clear_label_encoder();
  plain.mutable_output()->clear_label_dim();
  state.set_columns(1);
  EXPECT_EQ(FaastStateFromProto(state, plain, &out).message().substr(0, 29),
            "snapshot.faast.label_vectors:");
  spec.mutable_output()->set_label_dim(0);
  EXPECT_EQ(NormalizeFaastSpec(spec).status().message().substr(0, 22), "spec.output.label_dim:");
}

}  // namespace
}  // namespace adaptd
