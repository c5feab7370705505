// MemoryDurability: a Durability whose durable state is a MemoryDisk in the process: each
// store's log of records (WalRecord, the local log's format) and its last stored state (the
// ExportStore file), plus which server holds each store. It is the contract's second
// implementation, the one that makes fencing real: every server opened on a disk claims the
// stores it recovers, so a server opened later on the same disk takes them over and the
// earlier one's appends fail with OwnershipLostError, changing nothing. A test crashes a
// server by dropping it (nothing it held in memory survives), fails an append before it is
// durable (FailAppends), and restarts by opening another server on the disk.
//
// An append is durable once it is in the disk's log; a store's appends and their application
// run under the store's lock, one at a time, so they apply in append order. Store ids count
// from the disk's own sequence, not from a log position.
#ifndef ADAPTD_SERVER_DURABILITY_MEMORY_DURABILITY_H_
#define ADAPTD_SERVER_DURABILITY_MEMORY_DURABILITY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kernels/backend.h"
#include "server/config/defaults.h"
#include "server/durability/durability.h"
#include "server/persistence/applied_ids.h"

namespace adaptd {

// What survives a MemoryDurability: shared by the servers opened on it, one after another or
// side by side. Thread-safe.
class MemoryDisk {
 public:
  // The next `count` appends (of any store) fail before they are durable, as a log whose sync
  // fails: nothing of them is kept, and their callers get Unavailable.
  void FailAppends(int count) ABSL_LOCKS_EXCLUDED(mu_);
  // The records in tenant/name's log after its stored state (0 when unknown).
  size_t LogRecords(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class MemoryDurability;
  struct Log {
    std::string state;                 // the last stored state (a snapshot file); empty: none
    std::vector<std::string> records;  // serialized WalRecords after it, in append order
    uint64_t holder = 0;               // the server that holds the store (its claim)
    bool live = false;                 // created and not deleted since
    bool pinned = false;               // as of the stored state
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Log> logs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_server_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_incarnation_ ABSL_GUARDED_BY(mu_) = 1;
  int fail_appends_ ABSL_GUARDED_BY(mu_) = 0;
};

class MemoryDurability final : public Durability {
 public:
  struct Options {
    // Remembered example ids per store (AppliedIds).
    size_t max_ids_per_store = defaults::kMaxExampleIds;
  };

  // Recovers every store on `disk` (its stored state, then its log) into `recovered`, all
  // loaded, and claims them: from now on this server holds them.
  static absl::StatusOr<std::unique_ptr<MemoryDurability>> Open(
      std::shared_ptr<MemoryDisk> disk, kernels::Backend* backend,
      std::vector<RecoveredStore>* recovered, Options options);
  static absl::StatusOr<std::unique_ptr<MemoryDurability>> Open(
      std::shared_ptr<MemoryDisk> disk, kernels::Backend* backend,
      std::vector<RecoveredStore>* recovered) {
    return Open(std::move(disk), backend, recovered, Options());
  }

  Fence CurrentFence(const std::string& tenant, const std::string& name) const override;
  absl::StatusOr<Position> AppendCreate(const std::string& tenant, const std::string& name,
                                        std::shared_ptr<Store> store,
                                        const adapt::v1::StoreSpec& spec, bool imported,
                                        const Fence& fence) override;
  absl::Status StoreImported(const std::string& tenant, const std::string& name, const Store* store,
                             const std::vector<std::string>& applied_ids) override;
  absl::StatusOr<Position> AppendDelete(const std::string& tenant, const std::string& name,
                                        const Fence& fence) override;
  absl::Status WaitDurable(const Position& position) override;
  uint64_t Incarnation(const std::string& tenant, const std::string& name) const override;
  void AppendWrite(const std::string& tenant, const std::string& name, const Store* store,
                   adapt::v1::WalWrite write, const Fence& fence, Apply apply,
                   WriteDone done) override;
  absl::Status AppendPin(const std::string& tenant, const std::string& name, const Store* store,
                         bool pinned, const Fence& fence) override;
  absl::Status AppendCompile(const std::string& tenant, const std::string& name, const Store* store,
                             const adapt::v1::CompileRequest& request, const BaseReadout* base,
                             const Fence& fence) override;
  absl::Status AppendAutoCompile(const Store* store, std::string* tenant,
                                 std::string* name) override;
  bool Applied(const std::string& tenant, const std::string& name, const Store* store,
               const std::string& id) const override;
  std::vector<std::string> RememberedIds(const std::string& tenant, const std::string& name,
                                         const Store* store) const override;
  uint64_t RememberedBytes(const std::string& tenant, const std::string& name) const override;
  absl::StatusOr<std::shared_ptr<Store>> Load(
      const std::string& tenant, const std::string& name,
      const std::function<bool(const Store&)>& keep_detached = nullptr) override;
  absl::StatusOr<std::shared_ptr<const LinearReadout>> LoadReadout(
      const std::string& tenant, const std::string& name) override;
  absl::StatusOr<bool> Unload(const std::string& tenant, const std::string& name,
                              const Store* store) override;
  absl::Status Checkpoint() override;
  std::string CheckpointError(const std::string& tenant, const std::string& name) const override;
  const std::string& recovery_report() const override { return recovery_report_; }
  void Close() override {}

 private:
  struct Entry {
    explicit Entry(size_t capacity) : ids(capacity) {}
    std::string tenant, name;
    absl::Mutex mu;                                    // one append (and its application) at a time
    std::shared_ptr<Store> store ABSL_GUARDED_BY(mu);  // null while cold
    uint64_t incarnation ABSL_GUARDED_BY(mu) = 0;
    AppliedIds ids ABSL_GUARDED_BY(mu);
    bool pinned ABSL_GUARDED_BY(mu) = false;
    bool dirty ABSL_GUARDED_BY(mu) = false;  // records since the stored state
    std::string checkpoint_error ABSL_GUARDED_BY(mu);
  };
  // A store rebuilt from a log: its state, ids, pin and incarnation; null store when the log
  // ends with a delete or an import whose state was never stored.
  struct Rebuilt {
    std::shared_ptr<Store> store;
    uint64_t incarnation = 0;
    std::vector<std::string> ids;
    bool pinned = false;
    adapt::v1::StoreSpec spec;
  };

  MemoryDurability(std::shared_ptr<MemoryDisk> disk, kernels::Backend* backend, Options options,
                   uint64_t server)
      : disk_(std::move(disk)), backend_(backend), options_(options), server_(server) {}
  Rebuilt Rebuild(const std::string& key, const MemoryDisk::Log& log) const;
  std::shared_ptr<Entry> Find(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  // `key`'s entry when `store` is its loaded store, else null.
  std::shared_ptr<Entry> FindLoaded(const std::string& key, const Store* store) const;
  // Appends `record` to `key`'s log when `fence` is this server's and it still holds the store
  // (OwnershipLostError when not); Unavailable for an armed failure. `claim` makes this server
  // the holder of a store no one holds (a create).
  absl::Status AppendRecord(const std::string& key, const adapt::v1::WalRecord& record,
                            const Fence& fence, bool claim = false);
  // AppendWrite under the store's lock: checks, appends, applies.
  absl::StatusOr<CommitResult> WriteLocked(const std::string& key, Entry& entry, const Store* store,
                                           adapt::v1::WalWrite write, const Fence& fence,
                                           Apply apply) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // The stored state of `entry`, replacing its log (this server must still hold it).
  absl::Status StoreState(const std::string& key, Entry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);

  const std::shared_ptr<MemoryDisk> disk_;
  kernels::Backend* const backend_;
  const Options options_;
  const uint64_t server_;  // this server's claim on the stores it holds
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::string recovery_report_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_MEMORY_DURABILITY_H_
