// FaastStore: closed-form fast weights (docs/ALGORITHMS.md section 1, exact streaming). Adapt
// and Forget add or subtract float64 statistics G = Σ w x xᵀ, C = Σ w x yᵀ, N; Compile solves
// S = G⁺C (or the ridge / few-shot forms, faast_solver.h) and publishes it; Predict reads the
// last published S.
//
// Thread safety: every public method may be called concurrently. Locks, always taken in this
// order: compile_mu_ (serializes compiles; held while solving), mu_ (statistics, spec, labels,
// counters; held only for copies and O(dim²) merges), pub_mu_ (the published weights pointer;
// Predict takes only this one, so readers never wait for a compile).
// Layout: see faast_state.h (statistics) and faast_weights.h (published weights).
#ifndef ADAPTD_SERVER_STORES_FAAST_STORE_H_
#define ADAPTD_SERVER_STORES_FAAST_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "kernels/backend.h"
#include "server/stores/faast_snapshot.h"
#include "server/stores/faast_state.h"
#include "server/stores/faast_weights.h"
#include "server/stores/readout_cache.h"
#include "server/stores/store.h"

namespace adaptd {

class FaastTxn;

class FaastStore final : public Store {
 public:
  // `spec` must come from NormalizeFaastSpec; `backend` must outlive the store.
  FaastStore(const adapt::v1::StoreSpec& spec, kernels::Backend* backend);
  ~FaastStore() override;
  // Rebuilds a store from a validated snapshot and publishes the snapshot's version: its
  // read-out as it is, or (a snapshot without one) the statistics solved again.
  static absl::StatusOr<std::unique_ptr<FaastStore>> Restore(const adapt::v1::StoreSpec& spec,
                                                             FaastPersistent state,
                                                             kernels::Backend* backend);

  adapt::v1::StoreSpec spec() const override;
  int64_t dim() const override;
  std::unique_ptr<Txn> Begin(TxnKind kind) override;
  absl::StatusOr<CommitResult> Commit(Txn& txn) override;
  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override;
  absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) override;
  absl::StatusOr<std::unique_ptr<StagedCompile>> SolveCompile(
      const adapt::v1::CompileRequest& request, const BaseReadout* base = nullptr) override
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  absl::StatusOr<adapt::v1::CompileResponse> PublishCompile(std::unique_ptr<StagedCompile> staged)
      override ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  absl::Status NoteReplayedCompile(const adapt::v1::CompileRequest& request,
                                   const BaseReadout* base) override
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  absl::Status SolveReplayedCompile() override ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  bool ChangedSinceCompile() const override;
  void Describe(adapt::v1::StoreInfo* info) const override;
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override;
  absl::Status WriteState(StateSink sink) const override;
  std::shared_ptr<const LinearReadout> Readout() const override;
  absl::StatusOr<BaseReadout> ExportBase() const override;
  absl::Status StartFromBase(const BaseReadout& base) override
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  absl::StatusOr<adapt::v1::CompileResponse> CompileWithBase(
      const adapt::v1::CompileRequest& request, const BaseReadout& base) override
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);

  // The last published weights (null before the first compile), for tests and tools.
  std::shared_ptr<const FaastWeights> published() const ABSL_LOCKS_EXCLUDED(pub_mu_);
  // The solves this store has run (compiles, replayed compiles, restores solved again), for
  // tests and tools.
  uint64_t solves() const { return solves_.load(std::memory_order_relaxed); }

  // Label-embedding mode (spec.output.label_encoder): the stored embedding of each named label,
  // label_dim floats, or an empty vector for a label the store does not hold.
  std::vector<std::vector<float>> LabelVectors(const std::vector<std::string>& names) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // A new label-embedding store: takes the labels its spec declares (output.labels) with
  // their embeddings (labels × label_dim floats), and with faast.prior_examples > 0 publishes
  // the zero-shot read-out as version 1. FailedPrecondition when the store is not new or not
  // in label-embedding mode; InvalidArgument for names that differ from the declared ones.
  absl::Status SeedDeclaredLabels(const std::vector<std::string>& names,
                                  const std::vector<float>& vectors)
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);

 private:
  friend class FaastTxn;

  // What Txn::Add needs from the store, read in one locked section.
  struct TxnView {
    int64_t dim = 0;
    uint64_t examples = 0;
    bool raw_kept = false;
    int64_t labels = 0;
    std::vector<bool> known;  // per queried name
  };
  TxnView ViewForTxn(const std::vector<std::string>& names) const ABSL_LOCKS_EXCLUDED(mu_);
  // Replay: an adapt whose record carries no figures evaluates its examples against the
  // version published when it was logged, so the compile noted before it is solved first.
  void SolveNotedCompileBeforeEvaluating() ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  uint64_t version() const ABSL_LOCKS_EXCLUDED(pub_mu_);

  // Maps the transaction's columns to store columns; names the labels the store lacks.
  absl::Status MapColumns(const FaastTxn& txn, std::vector<int32_t>* column,
                          std::vector<std::string>* fresh) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AppendLabels(const std::vector<std::string>& fresh, const FaastTxn& txn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `base` the prior of the ridge solve: its labels the store lacks are added (after the
  // store's own), its columns mapped to the store's by name.
  absl::Status SetPriorLocked(const BaseReadout& base) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // What the store holds in memory, `w` its published weights (StoreInfo.memory_bytes).
  size_t BytesLocked(const FaastWeights* w) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes a snapshot's read-out as `version`, with `pending` examples not in it (Restore).
  // The float32 read-out of `w` (shared with grouped predicts through readout_cache_).
  std::shared_ptr<const LinearReadout> FloatReadout(
      const std::shared_ptr<const FaastWeights>& w) const;
  // Predict through the float32 read-out, with the caller's keys as they are (w->float_scoring,
  // no label embeddings); rows float32 cannot score are rescored in float64.
  absl::StatusOr<Predictions> PredictInFloat(const std::shared_ptr<const FaastWeights>& w,
                                             const float* keys, int64_t rows, int top_k) const;
  // PredictInFloat with the float32 copy `s` of the weights' S (dim × columns) given.
  absl::StatusOr<Predictions> PredictInFloatWith(const FaastWeights& w, const float* s,
                                                 const float* keys, int64_t rows, int top_k) const;
  void PublishRestored(FaastPublishedState published, uint64_t version, uint64_t pending)
      ABSL_LOCKS_EXCLUDED(mu_, pub_mu_);
  // Compiles with `overrides` and publishes as `version` (default: the next version).
  absl::StatusOr<adapt::v1::CompileResponse> CompileAndPublish(
      const adapt::v1::FaastParams& overrides, std::optional<uint64_t> version)
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  // The steps of a compile (faast_compile.cc): what the solve needs, copied from the store (the
  // pending examples become the compiling ones), the solve, and the publication of its weights
  // with its stats.
  struct CompileInput;
  class Staged;
  // The prior as it was before a refresh_base compile replaced it, put back when the compile
  // is not published.
  struct PriorBackup {
    bool replaced = false;
    std::vector<double> prior_t;
    uint64_t version = 0;
  };
  struct ReplayedCompile;
  // Waits until no compile is staged, then takes the input and solves; the compile stays
  // staged (no other begins) until Publish or its drop.
  absl::StatusOr<std::unique_ptr<Staged>> Stage(const adapt::v1::FaastParams& overrides,
                                                std::optional<uint64_t> version,
                                                const BaseReadout* base)
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  absl::StatusOr<std::unique_ptr<Staged>> StageLocked(const adapt::v1::FaastParams& overrides,
                                                      std::optional<uint64_t> version,
                                                      const BaseReadout* base)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(compile_mu_) ABSL_LOCKS_EXCLUDED(mu_, pub_mu_);
  adapt::v1::CompileResponse Publish(std::unique_ptr<Staged> staged)
      ABSL_LOCKS_EXCLUDED(compile_mu_, mu_, pub_mu_);
  // A staged compile dropped unpublished: its examples pending again, its base's prior undone.
  void Abandon(const Staged& staged) ABSL_LOCKS_EXCLUDED(compile_mu_, mu_);
  void RollBackLocked(uint64_t taken, const PriorBackup& prior) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `base` the prior (CompileRequest.refresh_base), the one before kept in `backup`.
  absl::Status ReplacePriorLocked(const BaseReadout& base, PriorBackup* backup)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a compile solves with besides the statistics (the checks it makes, its parameters,
  // labels), `version` the version published now; then the statistics themselves.
  absl::Status CompileParamsLocked(const adapt::v1::FaastParams& overrides, uint64_t version,
                                   bool fixed_version, CompileInput* in) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CopyProblemLocked(CompileInput* in) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TakeCompileInputLocked(const adapt::v1::FaastParams& overrides,
                                      std::optional<uint64_t> version, CompileInput* in)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(compile_mu_, mu_);
  // Solves `in` into `out`'s weights, parameters and stats.
  absl::Status SolveInput(CompileInput in, Staged* out) const;
  adapt::v1::CompileResponse PublishCompiled(std::shared_ptr<FaastWeights> weights,
                                             const adapt::v1::FaastParams& params,
                                             adapt::v1::FaastStats stats,
                                             std::optional<uint64_t> version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(compile_mu_) ABSL_LOCKS_EXCLUDED(mu_, pub_mu_);

  kernels::Backend* const backend_;
  // Fixed at creation.
  const bool labels_;      // the output is labels
  const bool embedded_;    // labels decoded by their embeddings (label-embedding mode)
  const bool one_hot_;     // labels as one-hot columns: labels_ && !embedded_
  const int64_t out_dim_;  // target width: M for vector stores, label_dim when embedded_
  const double decay_;
  // N₀ > 0: the published read-out is (1 − r)·I + r·S, r = N / (N₀ + N) (zero-shot at N = 0).
  const double prior_examples_;
  const bool few_shot_;
  const uint32_t max_labels_;
  const uint64_t auto_compile_every_;
  const uint32_t auto_compile_delay_ms_;

  absl::Mutex compile_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool staged_ ABSL_GUARDED_BY(compile_mu_) = false;  // a compile is solved, not yet published
  mutable absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(pub_mu_);
  adapt::v1::StoreSpec spec_ ABSL_GUARDED_BY(mu_);
  FaastStatistics stats_ ABSL_GUARDED_BY(mu_);
  // Copy-on-write, so compiles and published weights share a label list cheaply.
  std::shared_ptr<const std::vector<std::string>> label_names_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int32_t> label_index_ ABSL_GUARDED_BY(mu_);
  // embedded_: each label's embedding as given at its first adapt (labels × out_dim_).
  std::vector<float> label_vectors_ ABSL_GUARDED_BY(mu_);
  uint64_t pending_ ABSL_GUARDED_BY(mu_) = 0;    // examples changed since the last compile start
  uint64_t compiling_ ABSL_GUARDED_BY(mu_) = 0;  // taken from pending_ by the compile under way
  PrequentialStats prequential_ ABSL_GUARDED_BY(mu_);
  adapt::v1::FaastStats last_stats_ ABSL_GUARDED_BY(mu_);
  // Replay: the last compile noted and not solved yet (NoteReplayedCompile).
  std::unique_ptr<ReplayedCompile> replayed_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> replay_noted_{false};  // replayed_ is set (read without the locks)
  mutable std::atomic<uint64_t> solves_{0};

  mutable absl::Mutex pub_mu_;
  std::shared_ptr<const FaastWeights> published_ ABSL_GUARDED_BY(pub_mu_);
  mutable ReadoutCache readout_cache_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_STORE_H_
