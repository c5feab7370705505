// FwPKM addressing against brute force, the projection, bfloat16 storage, and spec validation.
#include "server/stores/fwpkm_keys.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_test_util.h"
#include "server/stores/fwpkm_values.h"

namespace adaptd {
namespace {

using testing_util::StartsWithField;

struct Scored {
  float score;
  uint32_t slot;
};

// Top-k over all n² slots under s¹_i + s²_j, ties to the smaller slot.
std::vector<Scored> BruteForce(const FwpkmSubKeys& keys, const float* q, int k, float eps) {
  const int n = keys.n(), half = keys.half();
  std::vector<float> d2(n), s1(n), s2(n);
  keys.Distances(0, q, d2.data());
  for (int i = 0; i < n; ++i) s1[i] = IdwScore(d2[i], eps);
  keys.Distances(1, q + half, d2.data());
  for (int i = 0; i < n; ++i) s2[i] = IdwScore(d2[i], eps);
  std::vector<Scored> all;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) all.push_back({s1[i] + s2[j], static_cast<uint32_t>(i * n + j)});
  }
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const Scored& a, const Scored& b) {
    return a.score > b.score || (a.score == b.score && a.slot < b.slot);
  });
  all.resize(k);
  return all;
}

struct Case {
  int n, half, k;
};

TEST(FwpkmKeysTest, ProductKeyTopKEqualsBruteForce) {
  std::mt19937_64 rng(7);
  for (const Case& c : {Case{2, 1, 1}, Case{4, 2, 4}, Case{16, 4, 8}, Case{37, 8, 5},
                        Case{64, 16, 16}, Case{128, 16, 64}}) {
    FwpkmSubKeys keys(c.n, c.half, 11 + c.n);
    // Repeated sub-keys force ties the order must break by id.
    for (int cc = 0; cc < c.half; ++cc) {
      keys.at(0, c.n - 1, cc) = keys.at(0, 0, cc);
      keys.at(1, c.n / 2, cc) = keys.at(1, 0, cc);
    }
    FwpkmScratch scratch;
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> q = fwpkm_test::Gaussian(rng, 2 * c.half);
      if (trial % 10 == 0) {  // a query on a sub-key: d² = 0 in one half
        for (int cc = 0; cc < c.half; ++cc) q[cc] = keys.at(0, 0, cc);
      }
      if (trial % 10 == 1) std::fill(q.begin(), q.end(), 0.0f);  // every distance equal-ish
      for (float eps : {1e-3f, 0.5f}) {
        FwpkmAddress a;
        FwpkmAddressOf(keys, q.data(), c.k, eps, &scratch, &a);
        const std::vector<Scored> want = BruteForce(keys, q.data(), c.k, eps);
        for (int i = 0; i < c.k; ++i) {
          ASSERT_EQ(a.slot[i], want[i].slot) << "n=" << c.n << " k=" << c.k << " rank " << i;
          ASSERT_EQ(a.score[i], want[i].score);
        }
        double total = 0;
        for (int i = 0; i < c.k; ++i) {
          total += a.weight[i];
          if (i > 0) {
            EXPECT_LE(a.weight[i], a.weight[i - 1]);
          }
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
      }
    }
  }
}

TEST(FwpkmKeysTest, WeightsAreShepardInverseDistance) {
  FwpkmSubKeys keys(8, 2, 3);
  const float q[4] = {0.3f, -0.1f, 0.2f, 0.4f};
  FwpkmScratch scratch;
  FwpkmAddress a;
  const float eps = 1e-3f;
  FwpkmAddressOf(keys, q, 4, eps, &scratch, &a);
  // s' ∝ 1 / ((ε + d₁²)(ε + d₂²)).
  std::vector<double> w(4);
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    const int s1 = a.slot[i] / 8, s2 = a.slot[i] % 8;
    double d1 = 0, d2 = 0;
    for (int c = 0; c < 2; ++c) {
      d1 += std::pow(q[c] - keys.at(0, s1, c), 2);
      d2 += std::pow(q[2 + c] - keys.at(1, s2, c), 2);
    }
    total += (w[i] = 1.0 / ((eps + d1) * (eps + d2)));
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a.weight[i], w[i] / total, 1e-5);
}

TEST(FwpkmKeysTest, ProjectionIsSeededAndUnitNorm) {
  std::mt19937_64 rng(1);
  const std::vector<float> x = fwpkm_test::Gaussian(rng, 10);
  FwpkmProjection a(5, 10, 6), b(5, 10, 6), c(6, 10, 6), same(5, 10, 10);
  std::vector<float> qa(6), qb(6), qc(6), qs(10);
  a.Apply(x.data(), qa.data());
  b.Apply(x.data(), qb.data());
  c.Apply(x.data(), qc.data());
  same.Apply(x.data(), qs.data());
  EXPECT_EQ(qa, qb);
  EXPECT_NE(qa, qc);
  double n2 = 0, xs = 0;
  for (float v : qa) n2 += v * v;
  EXPECT_NEAR(n2, 1.0, 1e-5);
  for (float v : x) xs += v * v;
  EXPECT_NEAR(qs[3], x[3] / std::sqrt(xs), 1e-6);
  std::vector<float> zero(10, 0.0f), qz(6, 1.0f);
  a.Apply(zero.data(), qz.data());
  EXPECT_EQ(qz, std::vector<float>(6, 0.0f));
}

TEST(FwpkmKeysTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(FwpkmFromBfloat16(FwpkmToBfloat16(1.0f)), 1.0f);
  EXPECT_EQ(FwpkmFromBfloat16(FwpkmToBfloat16(-2.5f)), -2.5f);
  EXPECT_NEAR(FwpkmFromBfloat16(FwpkmToBfloat16(3.14159f)), 3.14159f, 0.0125f);
  EXPECT_TRUE(std::isnan(FwpkmFromBfloat16(FwpkmToBfloat16(std::nanf("")))));
  FwpkmValues v(/*bfloat16=*/true, 3);
  const double delta[3] = {1.0, -0.5, 0.25};
  const int64_t row = v.Touch(77);
  v.Add(row, delta);
  float out[3];
  v.Get(row, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -0.5f);
  EXPECT_EQ(v.Find(78), -1);
  v.Widen(5);
  float wide[5];
  v.Get(row, wide);
  EXPECT_EQ(wide[2], 0.25f);
  EXPECT_EQ(wide[4], 0.0f);
}

TEST(FwpkmParamsTest, DefaultsAreFilledIn) {
  auto spec = NormalizeFwpkmSpec(fwpkm_test::Spec(adapt::v1::OutputSpec::KIND_UNSPECIFIED, 0, 16));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const adapt::v1::FwpkmParams& p = spec->fwpkm();
  EXPECT_EQ(spec->output().kind(), adapt::v1::OutputSpec::KIND_LABELS);
  EXPECT_EQ(p.sub_keys(), kFwpkmDefaultSubKeys);
  EXPECT_EQ(p.top_k(), kFwpkmDefaultTopK);
  EXPECT_EQ(p.chunk(), kFwpkmDefaultChunk);
  EXPECT_EQ(p.value_lr(), 1.0);
  EXPECT_EQ(p.addressing_lr(), 1.0);
  EXPECT_EQ(p.idw_eps(), 1e-3);
  EXPECT_EQ(p.value_type(), adapt::v1::FwpkmParams::VALUE_TYPE_FLOAT32);
  EXPECT_EQ(p.key_dim(), 16u);  // the store's own (even, ≤ 64) dimension
  EXPECT_EQ(p.gate(), adapt::v1::FwpkmParams::GATE_NONE);
  EXPECT_EQ(p.max_labels(), kFwpkmDefaultMaxLabels);
  auto odd = NormalizeFwpkmSpec(fwpkm_test::Spec(adapt::v1::OutputSpec::KIND_NEXT, 0, 15));
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->fwpkm().key_dim(), kFwpkmDefaultKeyDim);
}

TEST(FwpkmParamsTest, RangesAreCheckedAndNamed) {
  using adapt::v1::FwpkmParams;
  struct Bad {
    const char* field;
    void (*set)(FwpkmParams*);
  };
  const Bad cases[] = {
      {"sub_keys", [](FwpkmParams* p) { p->set_sub_keys(1); }},
      {"sub_keys", [](FwpkmParams* p) { p->set_sub_keys(4097); }},
      {"top_k", [](FwpkmParams* p) { p->set_top_k(0); }},
      {"top_k", [](FwpkmParams* p) { p->set_top_k(65); }},
      {"top_k", [](FwpkmParams* p) { p->set_sub_keys(4), p->set_top_k(5); }},
      {"chunk", [](FwpkmParams* p) { p->set_chunk(0); }},
      {"chunk", [](FwpkmParams* p) { p->set_chunk(65537); }},
      {"value_lr", [](FwpkmParams* p) { p->set_value_lr(0); }},
      {"value_lr", [](FwpkmParams* p) { p->set_value_lr(NAN); }},
      {"addressing_lr", [](FwpkmParams* p) { p->set_addressing_lr(-1); }},
      {"idw_eps", [](FwpkmParams* p) { p->set_idw_eps(0); }},
      {"idw_eps", [](FwpkmParams* p) { p->set_idw_eps(2); }},
      {"key_dim", [](FwpkmParams* p) { p->set_key_dim(7); }},
      {"key_dim", [](FwpkmParams* p) { p->set_key_dim(2048); }},
      {"max_labels", [](FwpkmParams* p) { p->set_max_labels(0); }},
      {"value_type",
       [](FwpkmParams* p) { p->set_value_type(static_cast<FwpkmParams::ValueType>(9)); }},
      {"gate", [](FwpkmParams* p) { p->set_gate(static_cast<FwpkmParams::Gate>(9)); }},
  };
  for (const Bad& c : cases) {
    adapt::v1::StoreSpec spec = fwpkm_test::Spec(adapt::v1::OutputSpec::KIND_LABELS, 0, 8);
    c.set(spec.mutable_fwpkm());
    auto got = NormalizeFwpkmSpec(spec);
    ASSERT_FALSE(got.ok()) << c.field;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(StartsWithField(got.status().message(), std::string("spec.fwpkm.") + c.field));
  }
  auto vec0 = NormalizeFwpkmSpec(fwpkm_test::Spec(adapt::v1::OutputSpec::KIND_VECTOR, 0, 8));
  EXPECT_TRUE(StartsWithField(vec0.status().message(), "spec.output.dim"));
  adapt::v1::StoreSpec mixed = fwpkm_test::Spec(adapt::v1::OutputSpec::KIND_LABELS, 0, 8);
  mixed.mutable_faast();
  EXPECT_TRUE(StartsWithField(NormalizeFwpkmSpec(mixed).status().message(), "spec.faast"));
}

}  // namespace
}  // namespace adaptd
