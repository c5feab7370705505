// EtcdDurability: a Durability whose log is in etcd and whose states and large payloads are
// objects in object storage (docs/DURABLE_LOG.md), so that a server started anywhere with an
// empty disk, pointed at the same etcd and bucket, recovers every acknowledged change.
//
// - The claim: Open creates PREFIX/owner under this server's lease (waiting for an earlier
//   holder's lease to lapse); its create revision is the fence every append compares, so a
//   server whose claim was taken over can append nothing.
// - A store's entry (adapt.v1.RemoteStoreEntry under PREFIX/stores/TENANT/STORE) holds its
//   spec, incarnation, pin and the pointer to its last stored state; creates, deletes, pins
//   and stored states change it in fenced transactions.
// - Writes and compiles are log records under PREFIX/log/TENANT/STORE/INCARNATION/SEQ,
//   committed by one committer thread in group transactions (etcd_commit_queue.h), a record
//   over `inline_bytes` first written as an object.
// - Start-up reads the entries; a store whose log holds records after its stored state is
//   rebuilt at once (its description needs them), the others stay cold until first used. A
//   cluster member's OpenShard reads the entries alone (a failover opens many shards at once):
//   such a store stays cold too, StoredStateBehind until its first Load replays its log.
#ifndef ADAPTD_SERVER_DURABILITY_ETCD_DURABILITY_H_
#define ADAPTD_SERVER_DURABILITY_ETCD_DURABILITY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/config/defaults.h"
#include "server/durability/durability.h"
#include "server/durability/etcd_commit_queue.h"
#include "server/durability/etcd_fence.h"
#include "server/etcd/etcd_client.h"
#include "server/objstore/object_store.h"
#include "server/persistence/applied_ids.h"
#include "server/persistence/state_db.h"
#include "server/quota/tenant_quotas.h"

namespace adaptd {

using etcd::PrefixEnd;

// An etcd client as config.durable_log says (endpoints and TLS); errors name the durable log.
absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> ConnectConfiguredEtcd(
    const adapt::v1::DurableLogConfig& log);

// The backup hold (docs/CLUSTER_OPERATIONS.md, "Backup and restore"): PREFIX/backup-hold holds
// a deadline in unix seconds; while it lies in the future no server deletes an object.
std::string BackupHoldKey(const std::string& prefix);
// The deadline a hold's value names: decimal unix seconds, surrounding blanks allowed;
// InvalidArgument naming the key's value and why otherwise.
absl::StatusOr<absl::Time> ParseBackupHold(const std::string& value);

// An object as a stored pointer names it (key, size, CRC-32): DataLoss naming it when it is
// missing or its size or CRC-32 differs; object storage's own error otherwise.
absl::StatusOr<std::string> ReadStoredObject(ObjectStore& objects,
                                             const adapt::v1::RemoteObject& object);
// The record a log key's value holds (RemoteLogRecord), its payload and base read-out fetched
// from `objects`: DataLoss naming the key or the object when corrupt or missing. `on_read` (if
// set) hears each object read's outcome.
absl::StatusOr<adapt::v1::WalRecord> ReadStoredRecord(
    ObjectStore& objects, const std::string& log_key, const std::string& value,
    const std::function<void(const absl::Status&)>& on_read = nullptr);

class EtcdDurability final : public Durability {
 public:
  struct Options {
    // Every key in etcd starts with it; one per deployment sharing the etcd.
    std::string prefix = "/adaptd/";
    // The claim's value: who holds the prefix (for messages).
    std::string server_name = "adaptd";
    absl::Duration lease_ttl = absl::Seconds(5);
    // How long Open waits for an earlier holder's claim to go (its lease to lapse).
    absl::Duration claim_wait = absl::Seconds(30);
    // A record larger than this is written as an object first.
    size_t inline_bytes = 64 << 10;
    // How long a group transaction is retried before its records fail Unavailable.
    absl::Duration commit_timeout = absl::Seconds(30);
    size_t max_ids_per_store = defaults::kMaxExampleIds;
    // A store's state is written to object storage (and its log trimmed) once its log holds
    // this many records or bytes past its last stored state, and every `snapshot_interval`
    // for every store changed since.
    size_t snapshot_records = 1024;
    size_t snapshot_bytes = size_t{8} << 20;
    absl::Duration snapshot_interval = absl::Minutes(5);
    // A checkpoint (the sweep, or a graceful stop's) visits stores for at most this long; the
    // changes of those it did not reach stay in etcd's log, durable. A stop stays within a
    // pod's termination grace however many stores changed.
    absl::Duration checkpoint_budget = absl::Seconds(15);
    // Past this many records after its last stored state (its snapshots failing: object
    // storage unreachable), a store's writes are refused RESOURCE_EXHAUSTED.
    size_t max_log_records = 16384;
    // etcd kept healthy (docs/DURABLE_LOG.md): every `maintenance_interval` the server reads
    // each member's database size; past `space_guard` of `etcd_quota_bytes` (etcd's
    // --quota-backend-bytes) new writes are refused RESOURCE_EXHAUSTED and every changed store
    // is snapshot at once; after trims it compacts etcd's history and defragments, one member
    // at a time, each member whose file is over twice what it uses. Objects no entry or record
    // points at, older than `gc_grace`, are deleted every `gc_interval`. In a cluster
    // (`shards`), compaction, defragmentation and the collection run on one member: the holder
    // of shard 0.
    absl::Duration maintenance_interval = absl::Seconds(30);
    int64_t etcd_quota_bytes = int64_t{2} << 30;
    double space_guard = 0.8;
    absl::Duration gc_interval = absl::Hours(1);
    absl::Duration gc_grace = absl::Hours(1);
    // What the server's metrics hear; each optional, called on the thread that saw it.
    struct Hooks {
      // A group transaction answered: its seconds and records.
      std::function<void(double seconds, size_t records)> on_commit;
      // An object written: "payload", "state" or "readout", its bytes, and whether it was.
      std::function<void(const std::string& what, uint64_t bytes, bool ok)> on_object;
      // A store rebuilt from its stored state and its log, in `seconds`.
      std::function<void(double seconds)> on_restore;
      // An append refused because another server holds the claim.
      std::function<void()> on_fence_failure;
      // A failed call to "etcd" or to "s3" (object storage).
      std::function<void(const std::string& service)> on_error;
    };
    Hooks hooks;
    // The local cache of stored states (docs/DURABLE_LOG.md): a state database in this
    // directory, written with each stored state and read instead of object storage when it is
    // as recent as the state etcd points at. Empty: no cache.
    std::string cache_dir;
    // A member of a cluster on etcd (docs/CLUSTER_ETCD.md): each store's writes are fenced by
    // its shard's claim as `shards` tells, and a store's keys live under its shard
    // (PREFIX/shards/SSSS/stores/..., .../log/...). Open then claims nothing and recovers
    // nothing: the member opens each shard it comes to hold (OpenShard) and closes each it
    // gives up (CloseShard). Null: a single server, fenced by its claim of the prefix.
    std::shared_ptr<const ShardFences> shards;
    // A member's store counts (docs/CLUSTER_ETCD.md, "Quotas and base stores"): with `shards`,
    // the transaction creating a store of a tenant with max_stores also compares and
    // increments PREFIX/tenants/TENANT/stores (a delete's decrements it), so the count holds
    // over every member; over the limit a create is refused RESOURCE_EXHAUSTED. The engine then
    // counts nothing itself (CountsStores). Null: the engine counts the stores it holds.
    std::shared_ptr<const TenantQuotas> store_limits;
    // Fault injection for tests (EtcdCommitQueue::Options::fault).
    std::function<absl::Status()> commit_fault;
    // Fault injection for tests: after a state's transaction committed, its answer is replaced
    // by this status when it is not OK (the answer lost on its way back).
    std::function<absl::Status()> state_answer_fault;
  };

  // Claims the prefix, then recovers every store into `recovered` (rebuilt, or cold); with
  // `shards`, neither (OpenShard does, shard by shard).
  static absl::StatusOr<std::unique_ptr<EtcdDurability>> Open(
      std::unique_ptr<etcd::EtcdClient> client, std::shared_ptr<ObjectStore> objects,
      kernels::Backend* backend, std::vector<RecoveredStore>* recovered, Options options);
  // As the server's config says (config.durable_log, with the defaults of defaults.h):
  // connects to etcd and checks the bucket first, each failure naming its field; `hooks`
  // report to the server's metrics. With `shards`, as a cluster member (Options::shards).
  static absl::StatusOr<std::unique_ptr<EtcdDurability>> OpenConfigured(
      const adapt::v1::ServerConfig& config, kernels::Backend* backend,
      std::vector<RecoveredStore>* recovered, Options::Hooks hooks = {},
      std::shared_ptr<const ShardFences> shards = nullptr);
  ~EtcdDurability() override;

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
  // Unavailable once this server's lease is not known valid (etcd unanswered), and for good
  // once another server claimed the prefix.
  absl::Status ReadsAllowed(const std::string& tenant, const std::string& name) const override;
  const std::string& recovery_report() const override { return recovery_report_; }
  // Stops the committer and revokes the lease, so the claim goes at once.
  void Close() override;

  // A cluster member's shards (Options::shards). OpenShard recovers the shard's stores into
  // `recovered` from their entries and the log's keys alone, every store cold: one whose log
  // holds records past its stored state is StoredStateBehind (LoadReadout answers null for it)
  // until Load replays them, under the shard's fence of the time; CloseShard writes each changed
  // store of the shard to object storage (what it cannot write stays in etcd's log, durable) and
  // forgets the shard's stores, naming them in `closed`. The caller stops the shard's calls first.
  absl::Status OpenShard(int shard, std::vector<RecoveredStore>* recovered) override;
  absl::Status CloseShard(int shard, std::vector<std::string>* closed) override;
  bool StoredStateBehind(const std::string& tenant, const std::string& name) const override;
  // True for a member with Options::store_limits.
  bool CountsStores() const override {
    return options_.shards != nullptr && options_.store_limits != nullptr;
  }

  // The age of the oldest change not yet in object storage, in seconds (0 when every store's
  // state is there): what a snapshot lags by. Visits every store.
  double OldestChangeSeconds() const;

  // One round of etcd's upkeep: member sizes and the space guard, snapshots when over it,
  // compaction after trims, defragmentation; with `collect`, unreferenced objects too. Runs on
  // its own every maintenance_interval (and gc_interval); public for tests and operators. A
  // cluster member (Options::shards) keeps its space guard and snapshots; compaction,
  // defragmentation and the collection run on the holder of shard 0 alone, which compacts
  // whenever etcd's revision moved on since its last compaction (the trims are the others').
  struct Upkeep {
    bool upkeep_here = false;      // this server compacts, defragments and collects
    int64_t largest_db_bytes = 0;  // the largest member file, after the round
    bool guard_on = false;         // writes refused for space
    int64_t compacted_to = 0;      // the revision compacted to (0: none this round)
    int defragmented = 0;          // members defragmented
    int objects_deleted = 0;       // unreferenced objects removed
    bool deletions_held = false;   // the collection waited for a backup hold
  };
  absl::StatusOr<Upkeep> Maintain(bool collect);

  // The fence's claim revision (tests).
  int64_t claim_revision() const { return claim_revision_; }

 private:
  struct Entry {
    explicit Entry(size_t capacity) : ids(capacity) {}
    std::string tenant, name;
    absl::Mutex mu;  // the store's appends are numbered, and applied, under it
    adapt::v1::RemoteStoreEntry meta ABSL_GUARDED_BY(mu);  // as etcd holds it
    std::shared_ptr<Store> store ABSL_GUARDED_BY(mu);      // null while cold
    AppliedIds ids ABSL_GUARDED_BY(mu);
    uint64_t next_seq ABSL_GUARDED_BY(mu) = 1;  // known while loaded
    uint64_t applied_seq ABSL_GUARDED_BY(mu) = 0;
    std::deque<uint64_t> in_flight ABSL_GUARDED_BY(mu);     // appended, not yet applied, in order
    std::set<std::string> pending_ids ABSL_GUARDED_BY(mu);  // ids of the writes in flight
    // Records whose commit's outcome is unknown (etcd stopped answering): read back before
    // the store's next append, and replayed when they were committed.
    std::map<uint64_t, adapt::v1::WalRecord> uncertain ABSL_GUARDED_BY(mu);
    bool dirty ABSL_GUARDED_BY(mu) = false;  // changed since the stored state
    // Evicted to the local cache, its state not yet in object storage (its log still in etcd).
    bool cached_only ABSL_GUARDED_BY(mu) = false;
    // Cold, its log holding records past its stored state (opened by OpenShard without a
    // replay): its stored description and read-out are not its state; cleared by Load.
    bool behind ABSL_GUARDED_BY(mu) = false;
    // When it was last clean (ns since the epoch; 0: clean), read without the lock by
    // OldestChangeSeconds, so a scrape never waits on a snapshot's upload.
    std::atomic<int64_t> dirty_since_ns{0};
    // The log after the stored state: records and bytes.
    uint64_t log_records ABSL_GUARDED_BY(mu) = 0;
    uint64_t log_bytes ABSL_GUARDED_BY(mu) = 0;
    std::string checkpoint_error ABSL_GUARDED_BY(mu);
  };
  // A store rebuilt from its stored state and log.
  struct Rebuilt {
    std::shared_ptr<Store> store;
    std::vector<std::string> ids;
    uint64_t last_seq = 0;
    uint64_t log_records = 0, log_bytes = 0;  // replayed from the log
    bool from_cache = false;                  // the state came from the local cache
  };

  static void SetDirty(Entry& entry, bool dirty) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
    if (dirty && !entry.dirty) entry.dirty_since_ns = absl::ToUnixNanos(absl::Now());
    if (!dirty) entry.dirty_since_ns = 0;
    entry.dirty = dirty;
  }
  void Count(const absl::Status& status, const std::string& service) const;

  EtcdDurability(std::unique_ptr<etcd::EtcdClient> client, std::shared_ptr<ObjectStore> objects,
                 kernels::Backend* backend, Options options);
  absl::StatusOr<std::unique_ptr<etcd::LeaseKeeper>> NewLease();
  // Creates the claim under `lease` when no one holds it (and, with `previous`, only when the
  // epoch is still the one this server's claim at revision `previous` wrote): true when it
  // did, false naming the holder, or why etcd did not answer.
  absl::StatusOr<bool> TryClaim(int64_t lease, int64_t previous, std::string* holder);
  // At start: claims, waiting up to claim_wait for an earlier holder's lease to lapse.
  absl::Status Claim();
  // After this server's lease was lost: claims again under a new lease if no one claimed in
  // between (then the fence moves on), or fences this server for good. False: etcd did not
  // answer; tried again later.
  bool Reclaim();
  // Recovers every store whose keys are under `root` (the prefix, or a shard's). With `replay`,
  // a store whose log holds records past its stored state is rebuilt now; without, it is left
  // cold and `behind`.
  absl::Status RecoverUnder(const std::string& root, bool replay,
                            std::vector<RecoveredStore>* recovered);

  // Where `key`'s (tenant/store) keys live: the prefix, or its shard's under it.
  std::string RootOf(const std::string& key) const;
  std::string ShardRoot(int shard) const;
  int ShardOfKey(const std::string& key) const;
  std::string EntryKey(const std::string& key) const;
  std::string LogPrefix(const std::string& key, uint64_t incarnation) const;
  std::string LogKey(const std::string& key, uint64_t incarnation, uint64_t seq) const;
  // The fence of `key`'s writes (tenant/store): this server's claim of the prefix, or its
  // shard's claim (OwnershipLostError when this member does not hold the shard).
  absl::StatusOr<EtcdFence> FenceOf(const std::string& key) const;
  absl::Status CheckFence(const std::string& key, const Fence& fence) const;
  // A fenced transaction of `ops`, under `key`'s name for messages; `compares` beside the fence.
  // `answer`, when set, gets etcd's answer of a transaction that succeeded.
  absl::Status FencedTxn(const std::string& key, std::vector<etcdserverpb::Compare> compares,
                         std::vector<etcdserverpb::RequestOp> ops,
                         etcdserverpb::TxnResponse* answer = nullptr);

  // The store counts (etcd_durability_quota.cc). What a transaction creating (`delta` 1) or
  // deleting (-1) one of `tenant`'s stores adds for the tenant's count: for a tenant with
  // max_stores, the count compared as read and put changed (a create over the limit refused);
  // for one without, the drop of a count an earlier limit left; nothing when not counting.
  struct CountChange {
    std::string key;           // the count's key, when compared
    int64_t mod_revision = 0;  // the count's as read (0: absent, counted from the entries)
    std::vector<etcdserverpb::Compare> compares;
    std::vector<etcdserverpb::RequestOp> ops;
  };
  absl::StatusOr<CountChange> ChangeStoreCount(const std::string& tenant, int delta);
  // The count's key, and its value and mod revision as etcd holds it (0: absent).
  std::string StoreCountKey(const std::string& tenant) const;
  absl::StatusOr<int64_t> StoreCountRevision(const std::string& count_key, uint64_t* count);
  // The entries of `tenant`'s stores under every shard (a keys-only scan of PREFIX/shards/).
  absl::StatusOr<uint64_t> CountEntriesOf(const std::string& tenant);
  // FencedTxn of a create (`delta` 1) or delete (-1) of `key`'s store with its tenant's count
  // changed in the same transaction; read again and retried while other creates and deletes
  // of the tenant change the count first (Unavailable after kCountTries).
  absl::Status CountedTxn(const std::string& key, int delta,
                          std::vector<etcdserverpb::Compare> compares,
                          std::vector<etcdserverpb::RequestOp> ops);
  static constexpr int kCountTries = 10;

  std::shared_ptr<Entry> Find(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<Entry> FindLoaded(const std::string& key, const Store* store) const;

  // Rebuilds `key`'s store from its entry's stored state and its log.
  absl::StatusOr<Rebuilt> Rebuild(const std::string& key, const adapt::v1::RemoteStoreEntry& meta);
  // The record a log value holds (fetching its object); DataLoss naming the key when corrupt.
  absl::StatusOr<adapt::v1::WalRecord> ReadRecord(const std::string& log_key,
                                                  const std::string& value);
  // Appends `record` to `entry`'s log and waits for its commit; then, in the store's order,
  // runs `apply` (under the entry's lock). `ids` join the remembered ids when it succeeds.
  absl::StatusOr<CommitResult> AppendAndApply(
      const std::string& key, Entry& entry, adapt::v1::WalRecord record, const Fence& fence,
      absl::FunctionRef<absl::StatusOr<CommitResult>()> apply) ABSL_LOCKS_EXCLUDED(entry.mu);
  // AppendAndApply once the commit answered `committed`: in the store's order, applies it (or
  // keeps it as uncertain); `snapshot_due` when the store's log passed its bound.
  absl::StatusOr<CommitResult> FinishAppend(const std::string& key, Entry& entry, uint64_t seq,
                                            const absl::Status& committed, bool unknown,
                                            const adapt::v1::WalRecord& record, size_t bytes,
                                            absl::FunctionRef<absl::StatusOr<CommitResult>()> apply,
                                            bool* snapshot_due) ABSL_LOCKS_EXCLUDED(entry.mu);
  // A refresh_base compile's copy of the base's read-out, written as an object named by its
  // SHA-256 (shared by every store compiled against the same base version) and pointed at by
  // `value`; nothing for other records.
  absl::Status ShareBaseReadout(const std::string& key, adapt::v1::WalRecord* record,
                                adapt::v1::RemoteLogRecord* value);
  // Reads back the records whose commit's outcome was unknown, replaying the committed ones.
  absl::Status ResolveUncertain(const std::string& key, Entry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // A store's state as stored: the file (with its DurableMark), the read-out (empty: none), its
  // StoreInfo, and the log position it holds.
  struct EncodedState {
    adapt::v1::StoreSpec spec;
    uint64_t incarnation = 0, seq = 0;
    std::string file, readout, info;
  };
  absl::StatusOr<EncodedState> EncodeState(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // Writes `entry`'s state (and read-out) as objects, then points its entry at them and trims
  // the log they cover, in one fenced transaction.
  absl::Status StoreState(const std::string& key, Entry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  absl::Status PublishState(const std::string& key, Entry& entry, const EncodedState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // A store evicted to the cache: its cached state to object storage, as PublishState.
  absl::Status StoreCachedState(const std::string& key, Entry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);
  // The snapshotter's thread: stores whose log passed its bound, and every store changed, each
  // snapshot_interval.
  void SnapshotLoop();
  void WantSnapshot(const std::string& key) ABSL_LOCKS_EXCLUDED(snapshot_mu_);
  // Deletes objects under snapshots/ and payloads/ that no entry or record points at, older
  // than gc_grace; how many. None while a backup hold holds deletions (`*held` then true).
  absl::StatusOr<int> CollectObjects(bool* held);
  // The backup hold (docs/CLUSTER_OPERATIONS.md, "Backup and restore"). Whether object deletions
  // are held now: PREFIX/backup-hold as `read` found it (read in the same transaction that made
  // the objects unreferenced), or as read now when `read` is null. Held while its deadline lies
  // in the future, and when it cannot be read or holds no deadline (the collector takes the
  // objects later). A read made after the objects became unreferenced is never stale: a hold
  // put after it precedes any etcd snapshot that could still point at them.
  bool DeletionsHeld(const etcdserverpb::RangeResponse* read = nullptr);
  // Deletes the objects of `keys` (empty ones skipped) unless DeletionsHeld(read).
  void DeleteUnreferenced(const std::vector<std::string>& keys,
                          const etcdserverpb::RangeResponse* read = nullptr);
  // A read of PREFIX/backup-hold, as an operation of a transaction.
  etcdserverpb::RequestOp ReadBackupHold() const;
  // The guard's refusal of a write of `key`, or OK.
  absl::Status SpaceGuard(const std::string& key) const;
  // Writes a state into the local cache; false when there is none or it failed.
  bool CacheState(const std::string& key, const EncodedState& state);
  absl::StatusOr<adapt::v1::RemoteObject> PutObject(const std::string& object_key,
                                                    const std::string& bytes);
  absl::StatusOr<std::string> GetObject(const adapt::v1::RemoteObject& object);

  std::unique_ptr<etcd::EtcdClient> client_;
  const std::shared_ptr<ObjectStore> objects_;
  kernels::Backend* const backend_;
  const Options options_;
  mutable absl::Mutex lease_mu_;
  std::unique_ptr<etcd::LeaseKeeper> lease_ ABSL_GUARDED_BY(lease_mu_);
  std::atomic<int64_t> claim_revision_{0};
  // Another server claimed the prefix while this one's lease had lapsed: nothing more is
  // appended or served.
  std::atomic<bool> fenced_{false};
  std::unique_ptr<EtcdCommitQueue> commits_;
  std::unique_ptr<StateDb> cache_;  // the local cache of stored states; null: none
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::string recovery_report_;
  absl::Mutex snapshot_mu_;
  std::set<std::string> snapshot_wanted_ ABSL_GUARDED_BY(snapshot_mu_);
  bool snapshot_stop_ ABSL_GUARDED_BY(snapshot_mu_) = false;
  bool lease_lost_ ABSL_GUARDED_BY(snapshot_mu_) = false;
  // Upkeep: writes refused for space; trims since the last compaction.
  std::atomic<bool> space_guard_on_{false};
  std::atomic<bool> trimmed_{false};
  std::atomic<int64_t> compacted_revision_{0};  // this server's last compaction (members')
  std::atomic<int64_t> largest_db_bytes_{0};
  std::atomic<bool> hold_seen_{false};  // deletions held at the last look (for the log)
  absl::Time next_maintenance_ ABSL_GUARDED_BY(snapshot_mu_);
  absl::Time next_collection_ ABSL_GUARDED_BY(snapshot_mu_);
  std::thread snapshotter_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_ETCD_DURABILITY_H_
