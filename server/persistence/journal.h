// Journal: adaptd's durable state under data_dir: the write-ahead log (data_dir/wal), one
// snapshot file per store (data_dir/snapshots/<tenant>/<store>~<incarnation>.snap, the
// ExportStore format plus a DurableMark) and failure markers (…~<incarnation>.failed).
//
// The engine calls it at each durable change: create/import and delete (under the registry's
// lock, so the log order is the registry's order), each committed Adapt/Forget (the commit and
// its LSN are taken under the store's log lock, so a store's records are in its commit order;
// the caller waits for durability after releasing it), and each compile. Checkpoint()
// snapshots every store, then deletes the log segments the snapshots cover; a background
// thread runs it when the current segment passes `snapshot_log_bytes`.
//
// Thread-safety: every method may be called concurrently. Lock order: the registry's lock,
// then an entry's log lock, then the journal's map lock.
#ifndef ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_
#define ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/wal.pb.h"
#include "kernels/backend.h"
#include "server/persistence/applied_ids.h"
#include "server/persistence/wal.h"
#include "server/stores/store.h"

namespace adaptd {

struct JournalOptions {
  std::string data_dir;
  bool sync = true;                             // see WalOptions::sync
  uint64_t snapshot_log_bytes = uint64_t{64} << 20;  // checkpoint past this segment size
  size_t max_ids_per_store = 65536;             // AppliedIds capacity
  std::function<void(double)> on_sync;          // fsync latency observer
};

struct RecoveredStore {
  std::string tenant, name;
  std::shared_ptr<Store> store;  // a FailedStore when it could not be recovered
};

class Journal {
 public:
  // Recovers the stores under options.data_dir into `recovered` and opens the log. Only an
  // unusable data directory is an error; a damaged store comes back as a FailedStore.
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const JournalOptions& options,
                                                       kernels::Backend* backend,
                                                       std::vector<RecoveredStore>* recovered);
  ~Journal();

  // Under the registry's lock, right after `store` was inserted: logs its creation (a spec,
  // or the imported snapshot when `imported` is set). Returns the LSN to wait for.
  uint64_t AppendCreate(const std::string& tenant, const std::string& name,
                        std::shared_ptr<Store> store, const adapt::v1::StoreSpec& spec,
                        const adapt::v1::StoreSnapshot* imported);
  // Under the registry's lock, right after tenant/name was removed. Returns the LSN.
  uint64_t AppendDelete(const std::string& tenant, const std::string& name);
  absl::Status WaitDurable(uint64_t lsn);

  // Whether example `id` was applied to `store` (tenant/name) already.
  bool Applied(const std::string& tenant, const std::string& name, const Store* store,
               const std::string& id) const;

  // Runs `commit` under the store's log lock and logs `write` (batches and ids) with it, then
  // waits until the record is durable. NotFound when the store was deleted or replaced;
  // Aborted when a concurrent call applied one of `write`'s ids first (nothing committed).
  absl::StatusOr<CommitResult> Commit(const std::string& tenant, const std::string& name,
                                      const Store* store, adapt::v1::WalWrite write,
                                      absl::FunctionRef<absl::StatusOr<CommitResult>()> commit);

  // Logs a finished compile (its parameter overrides persist) and waits for durability.
  absl::Status LogCompile(const std::string& tenant, const std::string& name, const Store* store,
                          const adapt::v1::CompileRequest& request);

  // Logs a finished automatic compile of `store` (found among the open stores; nothing is
  // logged for a store that was deleted meanwhile) and waits for durability, so replay
  // publishes the same versions.
  absl::Status LogAutoCompile(const Store* store);

  // Snapshots every healthy store and deletes the log segments they cover.
  absl::Status Checkpoint() ABSL_LOCKS_EXCLUDED(checkpoint_mu_);

  // Stops the background checkpoints and the log writer (no checkpoint).
  void Close();

  const Wal& wal() const { return *wal_; }

 private:
  struct Entry {
    std::string tenant, name;
    std::shared_ptr<Store> store;
    uint64_t incarnation = 0;
    absl::Mutex mu;
    uint64_t last_lsn ABSL_GUARDED_BY(mu) = 0;
    bool deleted ABSL_GUARDED_BY(mu) = false;
    AppliedIds ids ABSL_GUARDED_BY(mu);
    explicit Entry(size_t capacity) : ids(capacity) {}
  };

  explicit Journal(JournalOptions options) : options_(std::move(options)) {}
  std::shared_ptr<Entry> FindEntry(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  std::string SnapshotPath(const Entry& entry, const char* suffix) const;
  void MaybeCheckpointLater();
  void CheckpointLoop();

  const JournalOptions options_;
  std::unique_ptr<Wal> wal_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  absl::CondVar checkpoint_cv_;
  bool checkpoint_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex checkpoint_mu_;
  std::thread checkpointer_;

  friend class Recovery;
};

// "tenant/store", the log key of a store.
std::string StoreKey(const std::string& tenant, const std::string& name);

// adapt::v1::WalBatch <-> ExampleBatch.
adapt::v1::WalBatch ToWalBatch(const ExampleBatch& batch);
ExampleBatch FromWalBatch(const adapt::v1::WalBatch& batch);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_
