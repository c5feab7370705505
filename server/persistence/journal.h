// Journal: adaptd's durable state under data_dir: the write-ahead log (data_dir/wal) and the
// state database (data_dir/state, state_db.h), which holds each store's catalog entry and its
// last checkpointed state (the ExportStore format plus a DurableMark). The log's files go
// through JournalOptions::env (docs/DURABILITY.md, "When the disk fails"); the state database
// does its own I/O.
//
// The engine calls it at each durable change: create/import and delete (under the registry's
// lock, so the log order is the registry's order), each Adapt/Forget, and each compile. A
// write is logged first and applied after: Commit appends the record under the store's log
// lock (so a store's records are in its log order), waits for it to be durable without the
// lock, and only then applies the transaction, in the store's log order. So no reader sees a
// write that a crash could lose, and a write whose record cannot be made durable changes
// nothing.
//
// Checkpoint() is incremental: it writes the state of each store changed since its last
// checkpoint, one store at a time (at most one store's state in memory), commits them in
// groups, then deletes the log segments older than the oldest change still only in the log.
// A store whose state cannot be written is reported (CheckpointError) and holds back only the
// log after its own last checkpoint. A background thread runs it when the current segment
// passes `snapshot_log_bytes`.
//
// Thread-safety: every method may be called concurrently. Lock order: the registry's lock,
// then an entry's log lock, then the journal's map lock.
#ifndef ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_
#define ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/wal.pb.h"
#include "kernels/backend.h"
#include "server/config/defaults.h"
#include "server/persistence/applied_ids.h"
#include "server/persistence/env.h"
#include "server/persistence/state_db.h"
#include "server/persistence/wal.h"
#include "server/stores/store.h"

namespace adaptd {

struct JournalOptions {
  std::string data_dir;
  bool sync = defaults::kLogFsync;                            // see WalOptions::sync
  uint64_t snapshot_log_bytes = defaults::kSnapshotLogBytes;  // checkpoint past this size
  size_t max_ids_per_store = defaults::kMaxExampleIds;        // AppliedIds capacity
  std::function<void(double)> on_sync;                        // fsync latency observer
  Env* env = nullptr;  // files and clock; null: Env::Default(); must outlive the Journal
  uint64_t state_map_bytes = defaults::kStateMapBytes;  // see StateDbOptions::map_bytes
  // Stores written per state-database commit, at most (each commit is one fsync).
  size_t checkpoint_group = 256;
  // Called after each state-database commit of a checkpoint, before its stores are marked
  // clean (tests use it to order concurrent checkpoints).
  std::function<void()> after_state_commit;
  // Observes each checkpoint: stores written, stores whose state could not be written.
  std::function<void(uint64_t written, uint64_t failed)> on_checkpoint;
};

struct RecoveredStore {
  std::string tenant, name;
  // A FailedStore when it could not be recovered; null for a store left on disk (cold),
  // which Journal::Load reads back.
  std::shared_ptr<Store> store;
  // A cold store's kind, and its description when it was stored: a serialized StoreInfo
  // (spec included), parsed when the store is described (catalog_row.h).
  adapt::v1::StoreKind kind = adapt::v1::STORE_KIND_UNSPECIFIED;
  std::string info;
  std::string base;  // spec.base: the store it was created from, if any
  bool pinned = false;
  // The store's incarnation: an id of its own, kept across restarts, that no other store of
  // the same name has (Journal::Incarnation).
  uint64_t incarnation = 0;

  adapt::v1::StoreInfo Info() const {
    adapt::v1::StoreInfo parsed;
    (void)parsed.ParseFromString(info);
    return parsed;
  }
};

class Journal {
 public:
  // Recovers the stores under options.data_dir into `recovered` and opens the log. Only an
  // unusable data directory is an error; a damaged store comes back as a FailedStore.
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const JournalOptions& options,
                                                       kernels::Backend* backend,
                                                       std::vector<RecoveredStore>* recovered);
  ~Journal();

  // Under the registry's lock, right after `store`'s name was reserved: logs its creation
  // (its spec). With `imported`, the record says the store was imported: its state is not in
  // the log, so StoreImported must write it before the import is acknowledged (replay drops an
  // import whose state was never stored). Returns the LSN to wait for.
  uint64_t AppendCreate(const std::string& tenant, const std::string& name,
                        std::shared_ptr<Store> store, const adapt::v1::StoreSpec& spec,
                        bool imported);
  // After an imported store's record is durable: writes its state to the state database (a
  // one-store checkpoint), so a restart finds it. The state database's error when it could
  // not (the import then fails: AppendDelete it before abandoning its name).
  // `applied_ids` (oldest first) become the store's remembered ids, stored with its state.
  absl::Status StoreImported(const std::string& tenant, const std::string& name, const Store* store,
                             const std::vector<std::string>& applied_ids = {});
  // The example ids tenant/name's loaded `store` remembers, oldest first (empty when it is not
  // the loaded store).
  std::vector<std::string> RememberedIds(const std::string& tenant, const std::string& name,
                                         const Store* store) const;
  // Reads a cold store back from the state database (the store when it is loaded already).
  // NotFound when it was deleted; a state that cannot be read or restored makes the store a
  // FailedStore with the reason (recorded, so it stays failed), returned as the store;
  // Unavailable for an I/O error, after which the store stays cold.
  // When `keep_detached` accepts the restored store, it is returned without being loaded (a
  // read-only copy of the stored state, which the journal does not know about: what the
  // warm tier is made from); a failed store is always loaded.
  absl::StatusOr<std::shared_ptr<Store>> Load(
      const std::string& tenant, const std::string& name,
      const std::function<bool(const Store&)>& keep_detached = nullptr);

  // How start-up recovery went: the stores, and the time each step took (for the log).
  const std::string& recovery_report() const { return recovery_report_; }

  // The published read-out stored beside a cold store's state (what a read of the store
  // needs: the warm tier), without reading the state. Null when the store is loaded, failed,
  // or has no read-out stored (or a damaged one, logged: the state then answers); NotFound
  // when it was deleted; Unavailable for an I/O error.
  absl::StatusOr<std::shared_ptr<const LinearReadout>> LoadReadout(const std::string& tenant,
                                                                   const std::string& name);

  // Lets `store` (tenant/name's loaded store) go cold: writes its state first if it changed
  // since its last checkpoint, then drops the journal's reference and its remembered ids
  // (both come back with Load). False, leaving it loaded, when it changed meanwhile or was
  // deleted; an error when its state could not be written.
  absl::StatusOr<bool> Unload(const std::string& tenant, const std::string& name,
                              const Store* store);

  // Under the registry's lock, right after tenant/name was removed. Returns the LSN.
  uint64_t AppendDelete(const std::string& tenant, const std::string& name);
  // The incarnation of tenant/name's store, given by AppendCreate and recorded in its create
  // record and catalog entry: random, never a log position (docs/DURABILITY.md,
  // "Incarnation"); a store created before incarnations were ids keeps its create record's
  // LSN. 0 when there is no such store.
  uint64_t Incarnation(const std::string& tenant, const std::string& name) const;
  absl::Status WaitDurable(uint64_t lsn);

  // Whether example `id` was applied to `store` (tenant/name) already.
  bool Applied(const std::string& tenant, const std::string& name, const Store* store,
               const std::string& id) const;

  // Logs `write` (batches and ids), waits until the record is durable, then runs `commit`
  // under the store's log lock, after every earlier write of the store was applied (or
  // refused). NotFound when the store was deleted or replaced; Aborted when a concurrent call
  // logged one of `write`'s ids first; Unavailable naming the I/O error when the record could
  // not be made durable. In each of these cases `commit` does not run. When `commit` fails
  // (the store's state changed since the call validated), the record is in the log but was
  // not applied: replay, meeting the same state, fails it the same way and skips it.
  absl::StatusOr<CommitResult> Commit(const std::string& tenant, const std::string& name,
                                      const Store* store, adapt::v1::WalWrite write,
                                      absl::FunctionRef<absl::StatusOr<CommitResult>()> commit);

  // Logs a PinStore call on `store` (tenant/name's loaded store) and waits for durability.
  // NotFound when the store was deleted or replaced meanwhile.
  absl::Status LogPin(const std::string& tenant, const std::string& name, const Store* store,
                      bool pinned);

  // Logs a finished compile (its parameter overrides persist) and waits for durability. With
  // `base` (a refresh_base compile), the record holds the base read-out the compile copied.
  absl::Status LogCompile(const std::string& tenant, const std::string& name, const Store* store,
                          const adapt::v1::CompileRequest& request,
                          const BaseReadout* base = nullptr);

  // Logs a finished automatic compile of `store` (found among the open stores; nothing is
  // logged for a store that was deleted meanwhile) and waits for durability, so replay
  // publishes the same versions.
  // `tenant` and `name` (optional) receive the store's names (empty when it was not found).
  absl::Status LogAutoCompile(const Store* store, std::string* tenant = nullptr,
                              std::string* name = nullptr);

  // Writes the state of every healthy store changed since its last checkpoint and deletes the
  // log segments that only hold changes already in the state database. A store whose state
  // cannot be written keeps its previous state and its log records; the others go on. The
  // error names every store that failed and why (the state database's own failure stops the
  // checkpoint); writes go on either way.
  absl::Status Checkpoint() ABSL_LOCKS_EXCLUDED(checkpoint_mu_);

  // What the journal holds in memory for tenant/name's loaded store: its remembered example
  // ids (0 when it is not loaded or unknown).
  uint64_t RememberedBytes(const std::string& tenant, const std::string& name) const;

  // Why the last checkpoint could not write tenant/name's state; empty when it could (or the
  // store is unknown).
  std::string CheckpointError(const std::string& tenant, const std::string& name) const;

  // Stops the background checkpoints and the log writer (no checkpoint).
  void Close();

  const Wal& wal() const { return *wal_; }

 private:
  struct Entry {
    std::string tenant, name;
    std::shared_ptr<Store> store;
    uint64_t incarnation = 0;  // set before the entry is shared
    absl::Mutex mu;
    // The LSN of the record that created the store: its place in the log's order, which its
    // incarnation does not give.
    uint64_t create_lsn ABSL_GUARDED_BY(mu) = 0;
    uint64_t last_lsn ABSL_GUARDED_BY(mu) = 0;  // the store's last record in the log
    // The first record not in the state database yet (0: the stored state is current).
    uint64_t dirty_since ABSL_GUARDED_BY(mu) = 0;
    std::string checkpoint_error ABSL_GUARDED_BY(mu);  // the last checkpoint's failure
    // The entry of the stored state (what Load reads), serialized, without its `info` (the
    // engine's slot keeps the description); empty before the first checkpoint. Kept as bytes
    // and parsed by the load that needs it: a cold store costs its record's size, not a
    // parsed spec (catalog_row.h).
    std::string catalog ABSL_GUARDED_BY(mu);
    // The state-database write that stored `catalog` (StateDb::Writer::sequence). Two
    // checkpoints of one store (the background one and an eviction's) may finish out of
    // order: the entry keeps the record of the later write.
    uint64_t stored_by ABSL_GUARDED_BY(mu) = 0;
    bool pinned ABSL_GUARDED_BY(mu) = false;  // StoreSpec.pinned, as last logged
    bool deleted ABSL_GUARDED_BY(mu) = false;
    AppliedIds ids ABSL_GUARDED_BY(mu);
    // Writes logged but not yet applied (or refused), by LSN: they apply in this order.
    // Rarely more than a few: a vector (an empty std::deque allocates).
    std::vector<uint64_t> in_flight ABSL_GUARDED_BY(mu);
    absl::flat_hash_set<std::string> pending_ids ABSL_GUARDED_BY(mu);  // ids of in_flight
    explicit Entry(size_t capacity) : ids(capacity) {}
    // The LSN a snapshot taken now covers: every record of the store up to it is in the
    // store's state, no write after it is.
    uint64_t SnapshotLsn() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return in_flight.empty() ? last_lsn : in_flight.front() - 1;
    }
    // A record at `lsn` is only in the log until the next checkpoint.
    void MarkDirty(uint64_t lsn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      if (dirty_since == 0) dirty_since = lsn;
    }
  };
  // A deleted store whose state may still be in the state database: its delete record stays
  // in the log until a checkpoint has removed the state.
  struct PendingDelete {
    std::string key;
    uint64_t create_lsn = 0, lsn = 0;  // the deleted store's create record, the delete's
  };
  // One store's state taken by a checkpoint, waiting for its group's commit.
  struct Written {
    std::shared_ptr<Entry> entry;
    uint64_t lsn = 0;
    adapt::v1::CatalogEntry catalog;
  };

  // A stored state, decoded and restored.
  struct Restored {
    std::unique_ptr<Store> store;
    adapt::v1::StoreSpec spec;  // when the file decodes, even if the restore fails
    uint64_t lsn = 0;
    std::vector<std::string> ids;
  };
  // Decodes a stored state of `incarnation` and restores it; errors name `where`.
  static absl::Status RestoreState(const std::string& where, const std::string& file,
                                   uint64_t incarnation, kernels::Backend* backend, Restored* out);

  Journal(JournalOptions options, kernels::Backend* backend)
      : options_(std::move(options)),
        env_(options_.env ? options_.env : Env::Default()),
        backend_(backend) {}
  std::shared_ptr<Entry> FindEntry(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  // `key`'s entry unless deleted (NotFound), with its loaded store (null when cold) and, when
  // cold, its catalog entry, taken together. DataLoss when the entry kept does not parse.
  absl::StatusOr<std::shared_ptr<Entry>> Stored(const std::string& key,
                                                adapt::v1::CatalogEntry* catalog,
                                                std::shared_ptr<Store>* loaded) const
      ABSL_LOCKS_EXCLUDED(mu_);
  static absl::Status Gone(const std::string& key);
  void MaybeCheckpointLater();
  // Takes `entry`'s state into `writer` when it changed since its last checkpoint: true when
  // it was taken, false when there was nothing to write or the store's own snapshot failed
  // (recorded in the entry and in `failures`); an error when the state database failed.
  absl::StatusOr<bool> TakeState(const std::shared_ptr<Entry>& entry, StateDb::Writer* writer,
                                 Written* written, std::vector<std::string>* failures);
  // A one-store checkpoint of `entry`: its state, when it changed since it was last stored,
  // written in a state-database transaction of its own. The error of the state database or of
  // the store's snapshot.
  absl::Status StoreOne(const std::shared_ptr<Entry>& entry);
  // Commits `writer` after the log is durable up to `covered`, and marks `group` clean (or
  // failed with the error). With a `failed` status (a put failed), discards the writer and
  // marks the group failed with it.
  absl::Status CommitGroup(StateDb::Writer* writer, uint64_t covered, std::vector<Written>* group,
                           absl::Status failed = absl::OkStatus());
  // The first LSN the log must keep: the oldest change not in the state database.
  uint64_t KeepFrom(uint64_t first) const ABSL_LOCKS_EXCLUDED(mu_);
  void CheckpointLoop();

  const JournalOptions options_;
  Env* const env_;
  kernels::Backend* const backend_;
  std::unique_ptr<Wal> wal_;
  std::unique_ptr<StateDb> state_db_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  absl::BitGen incarnations_ ABSL_GUARDED_BY(mu_);  // draws the new stores' incarnations
  std::vector<PendingDelete> pending_deletes_ ABSL_GUARDED_BY(mu_);
  absl::CondVar checkpoint_cv_;
  bool checkpoint_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex checkpoint_mu_;
  std::thread checkpointer_;
  std::string recovery_report_;  // set by Open

  friend class Recovery;
};

// "tenant/store", the log key of a store.
std::string StoreKey(const std::string& tenant, const std::string& name);

// adapt::v1::WalBatch <-> ExampleBatch.
adapt::v1::WalBatch ToWalBatch(const ExampleBatch& batch);
ExampleBatch FromWalBatch(const adapt::v1::WalBatch& batch);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_JOURNAL_H_
