// A store kind defined only in this file: "centroid", a nearest-class-mean label store. It is
// registered here, with no edit anywhere else, and passes the Store contract
// (store_contract.h) and the engine's create / adapt / predict / export / import path: the
// proof that a kind is one descriptor (docs/ARCHITECTURE.md, "Adding a store kind").
//
// Its state: per label the sum of its keys and its count (float64); it predicts by the
// squared distance to each label's mean (score = −distance). Forget subtracts exactly. Its
// snapshot state is a google.protobuf.Struct in StoreSnapshot.other.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/struct.pb.h"
#include "server/stores/spec_checks.h"
#include "server/stores/store_contract.h"

namespace adaptd {
namespace {

constexpr auto kCentroidId = static_cast<adapt::v1::StoreKind>(100);

// One immutable version: readers hold it while writers build the next.
struct CentroidState {
  uint64_t version = 0;
  int64_t dim = 0;
  uint64_t examples = 0;
  std::vector<std::string> labels;
  std::vector<double> sums;    // labels × dim
  std::vector<double> counts;  // labels
};

class CentroidStore;

class CentroidTxn final : public Txn {
 public:
  CentroidTxn(const CentroidStore* store, TxnKind kind, int64_t dim);  // below CentroidStore

  absl::Status Add(const ExampleBatch& batch) override {
    if (absl::Status open = CheckOpen(); !open.ok()) return open;
    if (batch.labels.size() != static_cast<size_t>(batch.rows)) {
      return absl::InvalidArgumentError("examples: a centroid store needs one label per example");
    }
    const int64_t dim = dim_ != 0 ? dim_ : batch.dim;
    if (batch.rows > 0 && batch.dim != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("examples[0].input: dimension ", batch.dim, " does not match ", dim));
    }
    if (batch.rows > 0) dim_ = dim;
    keys_.insert(keys_.end(), batch.keys.begin(), batch.keys.end());
    labels_.insert(labels_.end(), batch.labels.begin(), batch.labels.end());
    return absl::OkStatus();
  }
  uint64_t staged() const override { return labels_.size(); }

 private:
  friend class CentroidStore;
  const TxnKind kind_;
  int64_t dim_;
  std::vector<float> keys_;
  std::vector<std::string> labels_;
};

class CentroidStore final : public Store {
 public:
  CentroidStore(adapt::v1::StoreSpec spec, CentroidState state)
      : spec_(std::move(spec)), state_(std::make_shared<const CentroidState>(std::move(state))) {}

  adapt::v1::StoreSpec spec() const override { return spec_; }
  int64_t dim() const override { return Current()->dim; }

  std::unique_ptr<Txn> Begin(TxnKind kind) override {
    return std::make_unique<CentroidTxn>(this, kind, Current()->dim);
  }

  absl::StatusOr<CommitResult> Commit(Txn& txn) override {
    absl::StatusOr<CentroidTxn*> claimed = ClaimTxn<CentroidTxn>(txn, this);
    if (!claimed.ok()) return claimed.status();
    CentroidTxn* const t = *claimed;
    absl::MutexLock lock(&write_mu_);
    std::shared_ptr<const CentroidState> current = Current();
    CommitResult result;
    result.version = current->version;
    if (t->labels_.empty()) {
      t->MarkCommitted();
      return result;
    }
    if (absl::Status s = CheckCommitDimension(current->dim, t->dim_); !s.ok()) return s;
    CentroidState next = *current;
    next.dim = t->dim_;
    const int64_t d = next.dim;
    const double sign = t->kind_ == TxnKind::kForget ? -1.0 : 1.0;
    for (size_t i = 0; i < t->labels_.size(); ++i) {
      auto it = std::find(next.labels.begin(), next.labels.end(), t->labels_[i]);
      int64_t column = it - next.labels.begin();
      if (it == next.labels.end()) {
        if (sign < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("examples[", i, "].label: '", t->labels_[i], "' was never adapted"));
        }
        next.labels.push_back(t->labels_[i]);
        next.sums.resize(next.labels.size() * d, 0.0);
        next.counts.push_back(0.0);
      }
      if (sign > 0 && !next.counts.empty()) {
        result.prequential.evaluated += 1;
        result.prequential.correct += Nearest(next, &t->keys_[i * d]) == column ? 1 : 0;
      }
      next.counts[column] += sign;
      if (next.counts[column] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("examples[", i, "].label: forgets more examples than were adapted"));
      }
      for (int64_t j = 0; j < d; ++j) next.sums[column * d + j] += sign * t->keys_[i * d + j];
    }
    next.examples =
        sign > 0 ? next.examples + t->labels_.size() : next.examples - t->labels_.size();
    next.version = current->version + 1;
    result.examples = t->labels_.size();
    result.version = next.version;
    {
      absl::MutexLock publish(&state_mu_);
      state_ = std::make_shared<const CentroidState>(std::move(next));
    }
    t->MarkCommitted();
    return result;
  }

  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override {
    std::shared_ptr<const CentroidState> s = Current();
    if (s->labels.empty()) return absl::FailedPreconditionError("the store has no examples yet");
    if (absl::Status shape = CheckReadShape(s->dim, rows, dim); !shape.ok()) return shape;
    Predictions p;
    p.version = s->version;
    p.rows = rows;
    p.top_k = std::min<int>(std::max(top_k, 1), static_cast<int>(s->labels.size()));
    p.label_names = std::make_shared<const std::vector<std::string>>(s->labels);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> score(s->labels.size());
      for (size_t l = 0; l < s->labels.size(); ++l) score[l] = -Distance(*s, l, keys + r * dim);
      std::vector<int32_t> order(score.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return score[a] > score[b]; });
      for (int k = 0; k < p.top_k; ++k) {
        p.label_ids.push_back(order[k]);
        p.scores.push_back(static_cast<float>(score[order[k]]));
      }
    }
    return p;
  }

  absl::StatusOr<adapt::v1::CompileResponse> Compile(const adapt::v1::CompileRequest&) override {
    return absl::FailedPreconditionError("centroid stores learn online; nothing to compile");
  }

  void Describe(adapt::v1::StoreInfo* info) const override {
    std::shared_ptr<const CentroidState> s = Current();
    *info->mutable_spec() = spec_;
    info->mutable_spec()->set_dim(static_cast<uint32_t>(s->dim));
    info->set_version(s->version);
    info->set_examples(s->examples);
    info->set_weighted_examples(static_cast<double>(s->examples));
    for (const std::string& l : s->labels) info->add_labels(l);
    info->set_memory_bytes((s->sums.size() + s->counts.size()) * sizeof(double));
  }

  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override {
    std::shared_ptr<const CentroidState> s = Current();
    google::protobuf::Struct state;
    auto& f = *state.mutable_fields();
    f["version"].set_number_value(static_cast<double>(s->version));
    f["dim"].set_number_value(static_cast<double>(s->dim));
    f["examples"].set_number_value(static_cast<double>(s->examples));
    auto list = [&](const char* name) { return f[name].mutable_list_value(); };
    for (const std::string& l : s->labels) list("labels")->add_values()->set_string_value(l);
    for (double x : s->sums) list("sums")->add_values()->set_number_value(x);
    for (double x : s->counts) list("counts")->add_values()->set_number_value(x);
    adapt::v1::StoreSnapshot snapshot;
    *snapshot.mutable_spec() = spec_;
    // Packed by hand, serialized deterministically: a map's order would otherwise vary, and
    // equal stores must have equal snapshot bytes.
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      state.SerializeToCodedStream(&coded);
    }
    snapshot.mutable_other()->set_type_url("type.googleapis.com/google.protobuf.Struct");
    snapshot.mutable_other()->set_value(bytes);
    return snapshot;
  }

  static absl::StatusOr<std::unique_ptr<Store>> Restore(const adapt::v1::StoreSnapshot& snap,
                                                        kernels::Backend*) {
    google::protobuf::Struct state;
    if (!snap.other().UnpackTo(&state)) {
      return absl::InvalidArgumentError("snapshot.other: not a centroid state");
    }
    auto& f = state.fields();
    for (const char* name : {"version", "dim", "examples"}) {
      if (!f.contains(name)) return absl::InvalidArgumentError(absl::StrCat("snapshot.", name));
    }
    CentroidState s;
    s.version = static_cast<uint64_t>(f.at("version").number_value());
    s.dim = static_cast<int64_t>(f.at("dim").number_value());
    s.examples = static_cast<uint64_t>(f.at("examples").number_value());
    auto list = [&](const char* name) {
      return f.contains(name) ? f.at(name).list_value() : google::protobuf::ListValue();
    };
    const google::protobuf::ListValue labels = list("labels"), sums = list("sums"),
                                      counts = list("counts");
    for (const auto& v : labels.values()) s.labels.push_back(v.string_value());
    for (const auto& v : sums.values()) s.sums.push_back(v.number_value());
    for (const auto& v : counts.values()) s.counts.push_back(v.number_value());
    if (s.counts.size() != s.labels.size() ||
        s.sums.size() != s.labels.size() * static_cast<size_t>(s.dim)) {
      return absl::InvalidArgumentError("snapshot.sums: sizes do not match labels × dim");
    }
    return std::unique_ptr<Store>(new CentroidStore(snap.spec(), std::move(s)));
  }

 private:
  std::shared_ptr<const CentroidState> Current() const {
    absl::MutexLock lock(&state_mu_);
    return state_;
  }
  static double Distance(const CentroidState& s, size_t label, const float* key) {
    double d2 = 0;
    const double n = std::max(s.counts[label], 1.0);
    for (int64_t j = 0; j < s.dim; ++j) {
      const double diff = key[j] - s.sums[label * s.dim + j] / n;
      d2 += diff * diff;
    }
    return d2;
  }
  static int64_t Nearest(const CentroidState& s, const float* key) {
    int64_t best = 0;
    for (size_t l = 1; l < s.labels.size(); ++l) {
      if (Distance(s, l, key) < Distance(s, best, key)) best = static_cast<int64_t>(l);
    }
    return best;
  }

  const adapt::v1::StoreSpec spec_;
  absl::Mutex write_mu_;  // serializes commits
  mutable absl::Mutex state_mu_;
  std::shared_ptr<const CentroidState> state_ ABSL_GUARDED_BY(state_mu_);
};

CentroidTxn::CentroidTxn(const CentroidStore* store, TxnKind kind, int64_t dim)
    : Txn(store), kind_(kind), dim_(dim) {}

StoreKind CentroidKind() {
  StoreKind kind;
  kind.id = kCentroidId;
  kind.name = "centroid";
  kind.normalize = [](const adapt::v1::StoreSpec& spec) -> absl::StatusOr<adapt::v1::StoreSpec> {
    adapt::v1::StoreSpec out = spec;
    const auto output = spec.output().kind();
    if (output != adapt::v1::OutputSpec::KIND_LABELS &&
        output != adapt::v1::OutputSpec::KIND_UNSPECIFIED) {
      return absl::InvalidArgumentError("spec.output: centroid stores predict labels");
    }
    out.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    return out;
  };
  kind.create = [](const adapt::v1::StoreSpec& spec,
                   kernels::Backend*) -> absl::StatusOr<std::unique_ptr<Store>> {
    CentroidState state;
    state.dim = spec.dim();
    return std::unique_ptr<Store>(new CentroidStore(spec, std::move(state)));
  };
  kind.restore = CentroidStore::Restore;
  kind.gauges.push_back(
      {"adaptd_centroid_labels",
       "centroid: labels, summed over stores",
       {KindGauge::Aggregate::kSum},
       [](const adapt::v1::StoreInfo& info) { return static_cast<double>(info.labels_size()); }});
  return kind;
}

const bool kRegistered = [] {
  const absl::Status status = StoreKinds::Global().Register(CentroidKind());
  if (!status.ok()) std::abort();
  return true;
}();

TEST(CustomKind, TheRegistryAndTheFactoryKnowIt) {
  ASSERT_TRUE(kRegistered);
  EXPECT_EQ(KindName(kCentroidId), "centroid");
  EXPECT_NE(StoreKinds::Global().Names().find("centroid"), std::string::npos);
  // Parameters of another kind are refused, naming the field.
  adapt::v1::StoreSpec spec;
  spec.set_kind(kCentroidId);
  spec.mutable_faast();
  auto refused = NormalizeSpec(spec);
  EXPECT_EQ(refused.status().message(),
            "spec.faast: parameters do not match store kind 'centroid'");
  // A duplicate registration is refused.
  EXPECT_EQ(StoreKinds::Global().Register(CentroidKind()).code(), absl::StatusCode::kAlreadyExists);
}

}  // namespace

namespace contract {
namespace {

struct Centroid {
  static constexpr const char* kKind = "centroid";
  static constexpr const char* kParams = "";
};
INSTANTIATE_TYPED_TEST_SUITE_P(TestOnly, StoreContract, ::testing::Types<Centroid>);

}  // namespace
}  // namespace contract
}  // namespace adaptd
