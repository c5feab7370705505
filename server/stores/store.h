// Store: one tenant's fast-weight memory. Implementations: FaastStore (faast_store.h),
// FalconStore (falcon_store.h), FwpkmStore (fwpkm_store.h); docs/ALGORITHMS.md describes what
// each computes.
//
// Writes go through a transaction: Begin() returns a Txn that validates and stages batches
// without touching the store; Commit() applies everything staged at once, or nothing. A failed
// Add leaves the Txn as it was before that Add. Readers (Predict) never wait for a faast compile
// or a falcon commit; an fwpkm Predict shares the store's lock with writers, so it waits while a
// commit or compile applies chunks (each kind's header states its locks).
// Thread safety: every method of Store may be called concurrently; a Txn belongs to one
// thread at a time.
//
// Layout: key and target matrices are row-major, one example per row.
#ifndef ADAPTD_SERVER_STORES_STORE_H_
#define ADAPTD_SERVER_STORES_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/stores/store_state.h"

namespace adaptd {

// Encoded examples: `rows` keys of `dim` floats and their targets. Inputs are validated by
// the caller (finite keys, non-empty valid labels, targets of the output's width); the store
// checks what depends on its state (dimension, known labels, label count).
struct ExampleBatch {
  int64_t rows = 0;
  int64_t dim = 0;
  std::vector<float> keys;          // rows × dim
  std::vector<std::string> labels;  // label stores: `rows` names
  std::vector<float> targets;       // vector stores: rows × M
  // Inputs whose text the encoder cut to its maximum length (EncodedBatch::truncated).
  uint64_t truncated_texts = 0;
  // `next` stores: the keys are consecutive items of a sequence (no labels or targets); the
  // store forms the pairs (previous item → item) itself.
  bool sequence = false;
  // With `sequence`: the batch's first item starts a new sequence (it has no predecessor; the
  // item kept from earlier batches is dropped).
  bool restart_sequence = false;
  // fwpkm: iterative reading, the batch fed this many times (≥ 1; 1 for other kinds).
  int passes = 1;
};

// Prequential ("predict, then learn") evaluation of examples before their update.
struct PrequentialStats {
  uint64_t evaluated = 0;
  uint64_t correct = 0;  // label stores: top-1 hits
  double loss_sum = 0;   // label stores: misses; vector stores: squared error / M
};

struct CommitResult {
  uint64_t examples = 0;  // examples applied (added or forgotten)
  uint64_t version = 0;   // the published version right after the commit
  PrequentialStats prequential;
  // Auto-compile wishes: compile now (count trigger), or after `compile_after` of quiet
  // (idle trigger; zero means no idle compile).
  bool compile_now = false;
  absl::Duration compile_after = absl::ZeroDuration();
};

struct Predictions {
  uint64_t version = 0;
  int64_t rows = 0;
  // Label stores: rows × top_k label ids (best first) with their scores.
  int top_k = 0;
  std::vector<int32_t> label_ids;
  std::vector<float> scores;
  std::shared_ptr<const std::vector<std::string>> label_names;
  // Vector and next stores: rows × out_dim outputs.
  int64_t out_dim = 0;
  std::vector<float> vectors;
  // Kinds that report one (fwpkm): a confidence in [0, 1] per row; empty otherwise.
  std::vector<float> confidence;
};

// A store's published linear read-out, for grouped predicts over many stores: the outputs of
// keys X (rows × dim) are prepare(X) · weights, then top-k for label stores. Immutable; a new
// published version makes a new one. Results equal the store's own Predict up to float
// rounding (the read-out is float; a store may compute in float64).
struct LinearReadout {
  uint64_t version = 0;
  int64_t dim = 0;
  int64_t columns = 0;
  bool labels = true;
  std::vector<float> weights;  // dim × columns
  // Label stores: the names of the columns (size == columns).
  std::shared_ptr<const std::vector<std::string>> label_names;
  // Applied to the keys (rows × dim, in place) before the product; empty: none.
  std::function<void(int64_t rows, float* keys)> prepare;
};

// A store's published read-out in float64 as another store copies it when it names this one as
// its base (StoreSpec.base, docs/BASE_STORES.md).
struct BaseReadout {
  uint64_t version = 0;  // the published version copied (≥ 1)
  int64_t dim = 0;
  int64_t columns = 0;
  bool labels = true;
  std::vector<std::string> label_names;  // labels: one per column
  std::vector<double> s;                 // dim × columns, row-major
  // The normalisation the base applies to keys before S (faast: none).
  adapt::v1::FalconParams::KeyNorm key_norm = adapt::v1::FalconParams::KEY_NORM_NONE;
};

enum class TxnKind { kAdapt, kForget };

class Store;

// A compile solved and not yet published (Store::SolveCompile): Store::PublishCompile publishes
// it. Dropped unpublished, it changes nothing (its examples are pending again, the previous
// version keeps serving) and the store's next compile may begin. It must not outlive its
// store.
class StagedCompile {
 public:
  virtual ~StagedCompile() = default;
};

class Txn {
 public:
  virtual ~Txn() = default;
  // Validates and stages one batch (one request message). Errors name the batch's field as
  // `examples[i]...`; on error nothing of this batch is staged.
  virtual absl::Status Add(const ExampleBatch& batch) = 0;
  // Examples staged so far.
  virtual uint64_t staged() const = 0;

  // What the transaction counted as it staged its batches (the prequential evaluation of an
  // adapt against the published version), for kinds that count then (faast): the call's write
  // record carries it, so that replay need not evaluate again (docs/DURABILITY.md,
  // "Compiles"). None (the default) for kinds that count at commit, in log order (falcon), and
  // those that do not report it.
  virtual std::optional<PrequentialStats> StagedPrequential() const { return std::nullopt; }
  // Replay, before the first Add: the figures the logged call counted. A kind that takes them
  // (true) evaluates nothing, so it reads no published version, and its commit counts exactly
  // `recorded`; one that does not (false, the default) evaluates as it stages or commits.
  virtual bool TakeRecordedPrequential(const PrequentialStats& recorded) {
    (void)recorded;
    return false;
  }

  // The store whose Begin made it, and whether that store's Commit has applied it.
  const Store* owner() const { return owner_; }
  bool committed() const { return committed_; }
  // For the owner's Commit, once it has applied the transaction.
  void MarkCommitted() { committed_ = true; }

 protected:
  explicit Txn(const Store* owner) : owner_(owner) {}
  // What every Add checks first: a committed transaction takes no more batches.
  absl::Status CheckOpen() const {
    if (!committed_) return absl::OkStatus();
    return absl::FailedPreconditionError("the transaction was already committed");
  }

 private:
  const Store* const owner_;
  bool committed_ = false;
};

// What every Store::Commit checks first: `txn` is a T that `store` began and that no commit
// has applied yet (InvalidArgument, FailedPrecondition).
template <typename T>
absl::StatusOr<T*> ClaimTxn(Txn& txn, const Store* store) {
  T* t = dynamic_cast<T*>(&txn);
  if (t == nullptr || t->owner() != store) {
    return absl::InvalidArgumentError("the transaction belongs to another store");
  }
  if (t->committed()) return absl::FailedPreconditionError("the transaction was already committed");
  return t;
}

// A commit's dimension check: InvalidArgument naming `field` when the store's dimension is
// fixed (non-zero) and the transaction's examples have another.
inline absl::Status CheckCommitDimension(int64_t store_dim, int64_t txn_dim,
                                         const char* field = "examples[0].input") {
  if (store_dim == 0 || store_dim == txn_dim) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": dimension ", txn_dim, " does not match the store's dimension ", store_dim));
}

// A read's shape check (Store::Predict): InvalidArgument for a negative row count or, when
// there are rows, keys of another dimension than the store's.
inline absl::Status CheckReadShape(int64_t store_dim, int64_t rows, int64_t dim) {
  if (rows < 0) return absl::InvalidArgumentError("inputs: negative row count");
  if (rows == 0 || dim == store_dim) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("inputs: dimension ", dim, " does not match the store's dimension ", store_dim));
}

class Store {
 public:
  virtual ~Store() = default;

  // The spec with every default filled in; `dim` may be 0 until the first commit fixes it.
  virtual adapt::v1::StoreSpec spec() const = 0;
  // The key dimension, 0 while not fixed.
  virtual int64_t dim() const = 0;

  virtual std::unique_ptr<Txn> Begin(TxnKind kind) = 0;
  // Applies `txn` (from this store's Begin) atomically. Errors leave the store unchanged.
  virtual absl::StatusOr<CommitResult> Commit(Txn& txn) = 0;

  // Reads the last published version. `top_k` (label stores) is clamped to the label count.
  // FailedPrecondition when nothing is published yet.
  virtual absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                              int top_k) const = 0;

  // Solves and publishes a new version (blocking; run it off the request threads). Kinds with
  // no compile step answer FailedPrecondition.
  virtual absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) = 0;
  // A compile in two steps, so that its record can be made durable in between: SolveCompile
  // solves (blocking; with `base`, after replacing the copy of the base, as CompileWithBase) and
  // publishes nothing; PublishCompile publishes what it staged, as the store's next version.
  // A store runs one compile at a time: a second SolveCompile waits until the staged one is
  // published or dropped. Writes go on meanwhile and stay pending. The defaults, for kinds
  // whose compile publishes at once (or that have none), run Compile (CompileWithBase) and
  // hand its answer over.
  virtual absl::StatusOr<std::unique_ptr<StagedCompile>> SolveCompile(
      const adapt::v1::CompileRequest& request, const BaseReadout* base = nullptr);
  virtual absl::StatusOr<adapt::v1::CompileResponse> PublishCompile(
      std::unique_ptr<StagedCompile> staged);

  // Replay (docs/DURABILITY.md, "Compiles"): a logged compile applied without its solve. Its
  // parameter overrides, the copy of the base it took (`base`) and its version persist, and
  // the statistics as they are now are the ones it solves; SolveReplayedCompile, once the log
  // is replayed, solves the last compile noted so and publishes it as it was published when it
  // ran, whatever writes were replayed after it. A kind whose writes read the published version
  // (faast's prequential evaluation of an adapt) solves the noted compile before such a write,
  // unless the write's record carries the figures it counted (Txn::TakeRecordedPrequential).
  // An error: the record changes nothing. The
  // defaults compile each record at once (kinds without a compile step answer
  // FailedPrecondition) and have nothing left to solve.
  virtual absl::Status NoteReplayedCompile(const adapt::v1::CompileRequest& request,
                                           const BaseReadout* base);
  virtual absl::Status SolveReplayedCompile() { return absl::OkStatus(); }

  // Whether a compile now would take in anything the last one did not (examples adapted or
  // forgotten since it began). The automatic compile skips a store that answers false, so
  // an explicit compile is not followed by a second version with nothing new.
  virtual bool ChangedSinceCompile() const { return true; }

  // Fills spec, version, counts, labels, memory and the kind's statistics (not the names).
  virtual void Describe(adapt::v1::StoreInfo* info) const = 0;

  // The whole state as one protobuf; RestoreStore (store_factory.h) reads it back. A state
  // past what one protobuf holds (2 GiB) answers ResourceExhausted: WriteState has no limit.
  virtual absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const = 0;

  // The whole state with its big arrays outside the protobuf (store_state.h), handed to `sink`
  // while the store holds its lock: the arrays' fill functions read the store and are valid
  // only until `sink` returns, and `sink` must not call the store. What `sink` returns is
  // returned. The default hands over Snapshot() without arrays (kinds with small states).
  virtual absl::Status WriteState(StateSink sink) const {
    absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = Snapshot();
    if (!snapshot.ok()) return snapshot.status();
    StoreStateOut state{*std::move(snapshot), {}};
    return sink(state);
  }

  // The published linear read-out, or null for kinds without one or while Predict would
  // fail (nothing published yet): callers then use Predict.
  virtual std::shared_ptr<const LinearReadout> Readout() const { return nullptr; }

  // Base stores (docs/BASE_STORES.md). The read-out a store with this one as its base copies:
  // FailedPrecondition while nothing is published; the default, for kinds that cannot be a
  // base, InvalidArgument naming spec.base.
  virtual absl::StatusOr<BaseReadout> ExportBase() const {
    return absl::InvalidArgumentError("spec.base: a store of this kind cannot be a base");
  }
  // A new store (no examples, nothing published) starts from `base`, whose shape the caller
  // has checked against the spec (dim, output); the store publishes its first version from it.
  virtual absl::Status StartFromBase(const BaseReadout& base) {
    (void)base;
    return absl::InvalidArgumentError("spec.base: stores of this kind cannot start from a base");
  }
  // Compile after replacing the copy of the base by `base` (CompileRequest.refresh_base).
  virtual absl::StatusOr<adapt::v1::CompileResponse> CompileWithBase(
      const adapt::v1::CompileRequest& request, const BaseReadout& base) {
    (void)request;
    (void)base;
    return absl::FailedPreconditionError(
        "refresh_base: only faast stores refresh their base; this kind copies it once, at "
        "creation");
  }
};

// The defaults of the staged compile and of replay: the compile published at once, its answer
// kept for PublishCompile.
class PublishedCompile final : public StagedCompile {
 public:
  explicit PublishedCompile(adapt::v1::CompileResponse response) : response_(std::move(response)) {}
  adapt::v1::CompileResponse& response() { return response_; }

 private:
  adapt::v1::CompileResponse response_;
};

inline absl::StatusOr<std::unique_ptr<StagedCompile>> Store::SolveCompile(
    const adapt::v1::CompileRequest& request, const BaseReadout* base) {
  absl::StatusOr<adapt::v1::CompileResponse> done =
      base != nullptr ? CompileWithBase(request, *base) : Compile(request);
  if (!done.ok()) return done.status();
  return std::make_unique<PublishedCompile>(*std::move(done));
}

inline absl::StatusOr<adapt::v1::CompileResponse> Store::PublishCompile(
    std::unique_ptr<StagedCompile> staged) {
  auto* published = dynamic_cast<PublishedCompile*>(staged.get());
  if (published == nullptr) {
    return absl::InvalidArgumentError("the staged compile belongs to another store");
  }
  return std::move(published->response());
}

inline absl::Status Store::NoteReplayedCompile(const adapt::v1::CompileRequest& request,
                                               const BaseReadout* base) {
  return (base != nullptr ? CompileWithBase(request, *base) : Compile(request)).status();
}

// Snapshot() of a kind that implements WriteState: the state with its arrays filled into their
// fields (InlineState).
inline absl::StatusOr<adapt::v1::StoreSnapshot> SnapshotFromState(const Store& store) {
  absl::StatusOr<adapt::v1::StoreSnapshot> out = absl::UnknownError("no state written");
  absl::Status status = store.WriteState([&](StoreStateOut& state) {
    out = InlineState(state);
    return out.status();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORE_H_
