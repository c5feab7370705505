#include "server/persistence/replay.h"

#include <memory>

#include "server/persistence/journal.h"

namespace adaptd {

absl::Status ReplayWrite(Store& store, const adapt::v1::WalWrite& write) {
  std::unique_ptr<Txn> txn = store.Begin(write.forget() ? TxnKind::kForget : TxnKind::kAdapt);
  // A kind that does not take the figures evaluates as it stages or commits.
  if (write.has_prequential())
    (void)txn->TakeRecordedPrequential(FromWalPrequential(write.prequential()));
  for (const auto& batch : write.batches()) {
    if (absl::Status added = txn->Add(FromWalBatch(batch)); !added.ok()) return added;
  }
  return store.Commit(*txn).status();
}

adapt::v1::WalPrequential ToWalPrequential(const PrequentialStats& stats) {
  adapt::v1::WalPrequential figures;
  figures.set_evaluated(stats.evaluated);
  figures.set_correct(stats.correct);
  figures.set_loss_sum(stats.loss_sum);
  return figures;
}

PrequentialStats FromWalPrequential(const adapt::v1::WalPrequential& figures) {
  PrequentialStats stats;
  stats.evaluated = figures.evaluated();
  stats.correct = figures.correct();
  stats.loss_sum = figures.loss_sum();
  return stats;
}

bool ReplayCompile(Store& store, const adapt::v1::WalRecord& record) {
  if (record.has_compile()) {
    // A compile changes no statistics; its parameter overrides and version persist. The solve
    // waits for the store's last compile (Store::SolveReplayedCompile).
    (void)store.NoteReplayedCompile(record.compile(), nullptr);
    return true;
  }
  if (!record.has_base_compile()) return false;
  const adapt::v1::WalBaseCompile& r = record.base_compile();
  BaseReadout base;
  base.version = r.base_version();
  base.columns = r.columns();
  base.dim = r.columns() > 0 ? r.s_size() / r.columns() : 0;
  base.labels = r.labels_size() > 0;
  base.label_names.assign(r.labels().begin(), r.labels().end());
  base.s.assign(r.s().begin(), r.s().end());
  (void)store.NoteReplayedCompile(r.compile(), &base);
  return true;
}

absl::Status FinishReplay(Store& store) { return store.SolveReplayedCompile(); }

adapt::v1::WalRecord CompileRecord(uint64_t incarnation, const adapt::v1::CompileRequest& request,
                                   const BaseReadout* base) {
  adapt::v1::WalRecord record;
  record.set_incarnation(incarnation);
  adapt::v1::CompileRequest* compile = record.mutable_compile();
  if (base != nullptr) {
    adapt::v1::WalBaseCompile* with_base = record.mutable_base_compile();
    with_base->set_base_version(base->version);
    with_base->mutable_labels()->Add(base->label_names.begin(), base->label_names.end());
    with_base->set_columns(static_cast<uint32_t>(base->columns));
    with_base->mutable_s()->Add(base->s.begin(), base->s.end());
    compile = with_base->mutable_compile();
  }
  *compile = request;
  compile->clear_tenant();
  compile->clear_store();
  compile->clear_refresh_base();
  return record;
}

}  // namespace adaptd
