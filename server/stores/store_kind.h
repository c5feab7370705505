// StoreKind: everything the server knows about one kind of store, described once and
// registered in StoreKinds. The factory (store_factory.h), the engine, the metrics and the
// tests look kinds up here instead of switching over them; docs/ARCHITECTURE.md ("Adding a
// store kind") lists the steps.
//
// Thread safety: Register may run concurrently with lookups. A registered kind is never
// changed or removed, so the pointers that lookups return stay valid for the process's life.
#ifndef ADAPTD_SERVER_STORES_STORE_KIND_H_
#define ADAPTD_SERVER_STORES_STORE_KIND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "google/protobuf/descriptor.h"
#include "kernels/backend.h"
#include "server/stores/store.h"
#include "server/stores/store_state.h"

namespace adaptd {

// One gauge a kind contributes to /metrics: a value read from each store's StoreInfo,
// aggregated over the kind's stores at scrape time. While a kind has no store its series are
// absent (an aggregate over nothing is undefined).
struct KindGauge {
  enum class Aggregate { kSum, kMean, kMax, kMin };
  std::string name;  // the metric family, e.g. "adaptd_falcon_residual_norm"
  std::string help;
  // {kSum}: one series without labels. Otherwise one series per entry, labelled
  // aggregate="sum"|"mean"|"max"|"min".
  std::vector<Aggregate> aggregates;
  std::function<double(const adapt::v1::StoreInfo&)> value;
};

// One gauge a kind sets at each successful compile of one of its stores: the last compile's
// value, read from the CompileResponse (its stats field named like the kind).
struct CompileGauge {
  std::string name;  // the metric family, e.g. "adaptd_faast_effective_rank"
  std::string help;
  std::function<double(const adapt::v1::CompileResponse&)> value;
};

struct StoreKind {
  adapt::v1::StoreKind id = adapt::v1::STORE_KIND_UNSPECIFIED;
  // Lower case: the metric label, adaptctl's --kind, and the name of the kind's fields in
  // StoreSpec.params, StoreInfo.stats and StoreSnapshot.state when adapt.proto has them.
  std::string name;
  uint32_t max_dim = 65536;
  // The parameters' message type (StoreSpec.params.<name>), or null for a kind without one.
  const google::protobuf::Descriptor* params = nullptr;
  // Accepts AdaptRequest.passes > 1 (iterative reading).
  bool rereads = false;
  // Accepts output.label_encoder (labels as embeddings).
  bool embeds_labels = false;
  // Its stores' published linear read-out (Store::Readout) answers Predict alone, so an
  // evicted store keeps it in memory (the warm tier, docs/RESIDENCY.md) and a read of a cold
  // one loads only that.
  bool warm = false;
  // Optional, for kinds whose read-out prepares the keys (LinearReadout::prepare): the
  // preparation a store of `spec` uses for keys of `dim` values, made again for a read-out
  // read from the state database (stored_readout.h). Null, or an empty function back: none.
  std::function<std::function<void(int64_t rows, float* keys)>(const adapt::v1::StoreSpec&,
                                                               int64_t dim)>
      readout_prepare;
  // Validates a spec of this kind and fills every default; errors name the field
  // ("spec.<name>.<param>: ..."). Runs after the shared checks (NormalizeSpec).
  std::function<absl::StatusOr<adapt::v1::StoreSpec>(const adapt::v1::StoreSpec&)> normalize;
  // An empty store for a normalized spec. `backend` outlives the store.
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const adapt::v1::StoreSpec&,
                                                       kernels::Backend*)>
      create;
  // The store a snapshot of this kind describes (the factory has checked that its spec is of
  // this kind and its state is this kind's). A snapshot that does not hold together answers
  // InvalidArgument naming "snapshot.<field>". A store that had a published version
  // publishes it again before returning.
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const adapt::v1::StoreSnapshot&,
                                                       kernels::Backend*)>
      restore;
  // Optional: `restore` for a snapshot whose big arrays may travel outside the protobuf
  // (snapshot file format 2, store_state.h), reading each array through `arrays` (which serve
  // the header's fields when the file had no section). Kinds whose Store implements WriteState
  // set it; a kind without it restores only snapshots without array sections.
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const adapt::v1::StoreSnapshot&,
                                                       const StateArrays&, kernels::Backend*)>
      restore_arrays;
  std::vector<KindGauge> gauges;
  // Compiles: the gauges a compile sets, and (optional) how long its solve took, read from
  // its response (adaptd_compile_duration_seconds; 0 without it).
  std::vector<CompileGauge> compile_gauges;
  std::function<double(const adapt::v1::CompileResponse&)> compile_seconds;
  // Optional: whether a store just loaded (described by `info`) compiles at once, because it
  // holds examples no compile covered and compiles by itself (its timer did not survive the
  // store's trip to disk).
  std::function<bool(const adapt::v1::StoreInfo& info)> compile_after_load;
  // Base stores (docs/BASE_STORES.md). `no_base`: why stores of this kind neither start from
  // a base nor serve as one (empty: they do both). `adopt_base` (optional): what a new store's
  // spec takes from its base's read-out, after the shared checks (falcon: the key norm, when
  // unset).
  std::string no_base;
  std::function<void(const BaseReadout& base, adapt::v1::StoreSpec* spec)> adopt_base;
  // The parameters (text format of `params`) of a small, quick store of this kind that does
  // no work in the background: what tests, fuzzers and the contract suite create.
  std::string small_params;
};

class StoreKinds {
 public:
  // The process's registry, holding the built-in kinds (store_kinds_builtin.cc) from the
  // first call on. A kind defined elsewhere (a test) registers itself here before use.
  static StoreKinds& Global();

  // AlreadyExists when the id or the name is taken; InvalidArgument when a required part
  // (id, name, normalize, create, restore) is missing or the name is not lower-case
  // [a-z0-9_].
  absl::Status Register(StoreKind kind) ABSL_LOCKS_EXCLUDED(mu_);

  // Null when no kind has this id / name.
  const StoreKind* Find(adapt::v1::StoreKind id) const ABSL_LOCKS_EXCLUDED(mu_);
  const StoreKind* Find(absl::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every kind, by id.
  std::vector<const StoreKind*> All() const ABSL_LOCKS_EXCLUDED(mu_);
  // "faast, falcon or fwpkm": the names, for error messages.
  std::string Names() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<const StoreKind>> kinds_ ABSL_GUARDED_BY(mu_);
};

// The registered name of `id`, or "unspecified" when no kind has it.
std::string KindName(adapt::v1::StoreKind id);

// The kind of `spec`, or InvalidArgument naming `field` ("spec.kind") when it is unset or
// unknown.
absl::StatusOr<const StoreKind*> KindOf(const adapt::v1::StoreSpec& spec,
                                        absl::string_view field = "spec.kind");

// The checks every kind shares, then the kind's own normalize: the kind is registered, the
// spec carries no other kind's parameters, and its dimension is at most the kind's max_dim.
absl::StatusOr<adapt::v1::StoreSpec> NormalizeSpec(const adapt::v1::StoreSpec& spec);

// A spec of `kind` with its small_params, `dim` and `output` (encoder "identity"), not yet
// normalized. InvalidArgument when small_params does not parse.
absl::StatusOr<adapt::v1::StoreSpec> SmallSpec(const StoreKind& kind, uint32_t dim,
                                               const adapt::v1::OutputSpec& output);

// Registers the built-in kinds in `kinds` (store_kinds_builtin.cc).
void RegisterBuiltinKinds(StoreKinds& kinds);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORE_KIND_H_
