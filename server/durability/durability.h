// Durability: where a server's acknowledged changes live, behind one interface so that the
// engine runs the same over the local write-ahead log and state database (LocalDurability),
// in memory (MemoryDurability, the contract's second implementation and the tests' fake), and
// later over a replicated log (etcd and object storage), whose appends are fenced and remote.
//
// The contract (durability_contract.h checks it on every implementation):
// - A change is logged first and applied after: a write's `apply` runs only once its record is
//   durable, so no reader sees a change a crash could lose; an append that fails changed
//   nothing, and a crash before an append is durable loses it (its caller got no
//   acknowledgement).
// - Every append carries the store's fence, as CurrentFence gave it when the call began. An
//   append whose fence is no longer the store's (another server holds the store now) fails
//   with OwnershipLostError and changes nothing; other stores are unaffected. The caller
//   answers such a failure UNAVAILABLE (retryable), never OK.
// - A store's writes apply in the order they were appended, one at a time, and replay applies
//   them in that order: the stores recovered at start-up equal, bit for bit, the stores as
//   their last acknowledged change left them.
// - Example ids applied by an acknowledged write stay applied across restarts (up to each
//   store's capacity of remembered ids), so a resent example is skipped.
// - Positions are opaque: only the implementation that made one reads it.
//
// A store is named by tenant and name, and its life by the `Store` object the implementation
// handed out (created, recovered or loaded): a call with another object (the store was deleted
// or replaced meanwhile) is refused NotFound. Thread-safe: every method may be called
// concurrently.
#ifndef ADAPTD_SERVER_DURABILITY_DURABILITY_H_
#define ADAPTD_SERVER_DURABILITY_DURABILITY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/wal.pb.h"
#include "server/persistence/journal.h"
#include "server/stores/store.h"

namespace adaptd {

// What makes an append valid: the store's fencing token. Constant for a single writer (the
// local implementation); for a replicated log, the revision of the claim this server holds.
struct Fence {
  std::string token;
  friend bool operator==(const Fence&, const Fence&) = default;
};

// Where an append landed, opaque to everything but the implementation that made it. Empty:
// durable already.
struct Position {
  std::string bytes;
};

// UNAVAILABLE, carrying a payload that IsOwnershipLost recognises: another server holds
// `store` ("tenant/name") now. `detail` says how this server found out.
absl::Status OwnershipLostError(absl::string_view store, absl::string_view detail);
bool IsOwnershipLost(const absl::Status& status);

class Durability {
 public:
  // A write's application to its store, run once its record is durable, in the store's append
  // order; its error means the record was logged but not applied (replay, meeting the same
  // state, fails it the same way and skips it).
  using Apply = absl::AnyInvocable<absl::StatusOr<CommitResult>() &&>;
  // A write's completion: `apply`'s result, or why nothing was applied.
  using WriteDone = absl::AnyInvocable<void(absl::StatusOr<CommitResult>) &&>;

  virtual ~Durability() = default;

  // The fence this server's appends to tenant/name carry now.
  virtual Fence CurrentFence(const std::string& tenant, const std::string& name) const = 0;

  // Records tenant/name's creation (its spec), right after its name was reserved (the caller's
  // registry lock held, so the log's order of creates and deletes is the registry's); durable
  // once WaitDurable(position) is OK. With `imported`, the record says the store's state is
  // not in the log: StoreImported must store it before the import is acknowledged (replay
  // drops an import whose state was never stored).
  virtual absl::StatusOr<Position> AppendCreate(const std::string& tenant, const std::string& name,
                                                std::shared_ptr<Store> store,
                                                const adapt::v1::StoreSpec& spec, bool imported,
                                                const Fence& fence) = 0;
  // After an imported store's record is durable: stores its state and remembers
  // `applied_ids` (oldest first) as applied. On an error the import fails (AppendDelete the
  // store before abandoning its name).
  virtual absl::Status StoreImported(const std::string& tenant, const std::string& name,
                                     const Store* store,
                                     const std::vector<std::string>& applied_ids) = 0;
  // Records tenant/name's deletion, right after it left the registry (its lock held). An
  // empty position when there was no such store.
  virtual absl::StatusOr<Position> AppendDelete(const std::string& tenant, const std::string& name,
                                                const Fence& fence) = 0;
  // Blocks until the append at `position` is durable; the reason when it cannot be.
  virtual absl::Status WaitDurable(const Position& position) = 0;
  // tenant/name's incarnation: an id of the store's own (not a log position), given when it
  // was created or imported, the same after a restart, and never that of an earlier store of
  // the name (a delete and a create give the new store another). RecoveredStore::incarnation
  // holds it for the stores recovered. 0 when there is no such store.
  virtual uint64_t Incarnation(const std::string& tenant, const std::string& name) const = 0;

  // Logs `write` (an Adapt or Forget call's batches and the example ids it applies), then,
  // once durable and after every earlier write of the store, runs `apply`; calls `done` once
  // with its result, on any thread, possibly before AppendWrite returns. `apply` does not run,
  // and `done` gets the reason, when: the store was deleted or replaced (NotFound), a
  // concurrent write applied one of the ids first (Aborted), the fence is stale
  // (OwnershipLostError), or the record could not be made durable (Unavailable).
  virtual void AppendWrite(const std::string& tenant, const std::string& name, const Store* store,
                           adapt::v1::WalWrite write, const Fence& fence, Apply apply,
                           WriteDone done) = 0;

  // Records a PinStore call, durably. NotFound when the store was deleted or replaced.
  virtual absl::Status AppendPin(const std::string& tenant, const std::string& name,
                                 const Store* store, bool pinned, const Fence& fence) = 0;
  // Records a finished compile (its parameter overrides and version persist), durably. With
  // `base` (a refresh_base compile), the record holds the copy of the base the compile took.
  // Nothing is recorded for a store deleted meanwhile.
  virtual absl::Status AppendCompile(const std::string& tenant, const std::string& name,
                                     const Store* store, const adapt::v1::CompileRequest& request,
                                     const BaseReadout* base, const Fence& fence) = 0;
  // Records an automatic compile of `store` (found among the stores held; nothing for one
  // deleted meanwhile), durably, under the store's current fence. `tenant` and `name`
  // (optional) receive its names (empty when it was not found).
  virtual absl::Status AppendAutoCompile(const Store* store, std::string* tenant,
                                         std::string* name) = 0;

  // Whether example `id` was applied to `store` (tenant/name's) by an acknowledged write.
  virtual bool Applied(const std::string& tenant, const std::string& name, const Store* store,
                       const std::string& id) const = 0;
  // The ids `store` remembers, oldest first (empty when it is not tenant/name's loaded store).
  virtual std::vector<std::string> RememberedIds(const std::string& tenant, const std::string& name,
                                                 const Store* store) const = 0;
  // What the remembered ids of tenant/name's loaded store hold in memory (0 when not loaded).
  virtual uint64_t RememberedBytes(const std::string& tenant, const std::string& name) const = 0;

  // A cold store read back (the loaded store when it is loaded). NotFound when it was deleted;
  // a state that cannot be restored makes it a FailedStore (returned); Unavailable for an I/O
  // error. When `keep_detached` accepts the restored store, it is returned without being
  // loaded (a read-only copy: what a warm tier is made from).
  virtual absl::StatusOr<std::shared_ptr<Store>> Load(
      const std::string& tenant, const std::string& name,
      const std::function<bool(const Store&)>& keep_detached = nullptr) = 0;
  // The read-out stored beside a cold store's state, without reading the state: null when the
  // store is loaded, failed, or has none stored (the state then answers).
  virtual absl::StatusOr<std::shared_ptr<const LinearReadout>> LoadReadout(
      const std::string& tenant, const std::string& name) = 0;
  // Lets `store` (tenant/name's loaded store) go cold: stores its state first when it changed.
  // False, leaving it loaded, when it changed meanwhile or was deleted.
  virtual absl::StatusOr<bool> Unload(const std::string& tenant, const std::string& name,
                                      const Store* store) = 0;

  // Whether reads of tenant/name may be served now: OK unless this server cannot be sure it
  // still holds the store (a replicated log whose lease is not known valid), then
  // Unavailable saying why.
  virtual absl::Status ReadsAllowed(const std::string& /*tenant*/,
                                    const std::string& /*name*/) const {
    return absl::OkStatus();
  }

  // Whether tenant/name is cold and its log holds records past its stored state, so that its
  // stored description and read-out miss them (a shard opened without replaying its stores'
  // logs: EtcdDurability::OpenShard). Such a store is described and read only once Load has
  // replayed its log; false for any other.
  virtual bool StoredStateBehind(const std::string& /*tenant*/, const std::string& /*name*/) const {
    return false;
  }

  // A cluster member's shards (docs/CLUSTER_ETCD.md), for a durability whose stores are kept
  // by shard (EtcdDurability as a member): OpenShard recovers the shard's stores into
  // `recovered` (cold ones may be StoredStateBehind); CloseShard writes the shard's changed
  // stores out and forgets them, naming each ("tenant/store") in `closed`. Others answer
  // FailedPrecondition.
  virtual absl::Status OpenShard(int /*shard*/, std::vector<RecoveredStore>* /*recovered*/) {
    return absl::FailedPreconditionError("this server's durability is not kept by shard");
  }
  virtual absl::Status CloseShard(int /*shard*/, std::vector<std::string>* /*closed*/) {
    return absl::FailedPreconditionError("this server's durability is not kept by shard");
  }

  // Whether this durability refuses a create over the tenant's max_stores itself, counting the
  // tenant's stores on every server (a cluster member on etcd, docs/CLUSTER_ETCD.md "Quotas
  // and base stores"): the engine's own count, of the stores held here, is then not checked.
  virtual bool CountsStores() const { return false; }

  // Stores the state of every store changed since it was last stored and drops the log that
  // state covers; a store that fails keeps its log (CheckpointError says why), the others go
  // on.
  virtual absl::Status Checkpoint() = 0;
  virtual std::string CheckpointError(const std::string& tenant, const std::string& name) const = 0;

  // What start-up recovery did ("N stores ... in T s").
  virtual const std::string& recovery_report() const = 0;
  // Stops background work; no checkpoint. Later calls may fail.
  virtual void Close() = 0;
};

// AppendWrite, waited for: its `done` result.
absl::StatusOr<CommitResult> CommitWrite(Durability& durability, const std::string& tenant,
                                         const std::string& name, const Store* store,
                                         adapt::v1::WalWrite write, const Fence& fence,
                                         Durability::Apply apply);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_DURABILITY_H_
