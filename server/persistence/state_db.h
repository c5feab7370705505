// StateDb: the per-store durable state under data_dir/state (why LMDB: docs/DURABILITY.md,
// "The state database"), in two LMDB environments, so that the catalog, which start-up reads
// whole, sits in a small file of its own rather than scattered among the states' pages:
//   data_dir/state/catalog: table `catalog`, "tenant/store" → adapt.v1.CatalogEntry (spec,
//            incarnation, create LSN, the LSN the state holds, a failure reason, the state's
//            size and generation, the store's description); table `meta`: the last
//            generation used.
//   data_dir/state: table `state`, "tenant/store" '\0' <8-byte big-endian generation>
//            <4-byte big-endian chunk number> → up to chunk_bytes of the store's snapshot
//            file (server/stores/snapshot_file.h), so a state has no size limit but the map's;
//            chunk number 0xFFFFFFFF holds the store's published read-out (an
//            adapt.v1.StoredReadout), written with the state, when it has one.
// A write puts a state under a new generation and commits the states first, then the
// catalog, whose entry names the generation: a crash between the two leaves the catalog on
// the previous state, still whole; the superseded generation is removed by a later write.
// Data directories written with one environment (the catalog as a table beside the states,
// chunk keys without a generation: generation 0) are moved over at open: the catalog is
// copied into its own environment, the states stay where they are until rewritten.
// Start-up reads the catalog alone; a store's state is read when the store is loaded, and
// its read-out alone when a read needs only that (the warm tier).
//
// Thread-safety: every method may be called concurrently. Reads never block and never wait
// for a writer. Writes go through a Writer, one at a time (BeginWrite waits for the previous
// one to end); a Writer belongs to the thread that began it. A superseded generation is
// removed only by a write after the one that superseded it committed, so a reader holding
// the entry it replaced may still read it meanwhile.
#ifndef ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_
#define ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/config/defaults.h"

struct MDB_env;
struct MDB_txn;

namespace adaptd {

struct StateDbOptions {
  std::string dir;                                // created when missing (the catalog: dir/catalog)
  uint64_t map_bytes = defaults::kStateMapBytes;  // the largest the database may grow (virtual)
  size_t chunk_bytes = size_t{64} << 20;          // a state is stored in pieces of this size
  bool sync = true;                               // fsync at each commit (off only for tests)
  // Tests: runs between a write's two commits (the states', then the catalog's); an error
  // stops the write there, as a crash would, and Commit returns it.
  std::function<absl::Status()> between_commits;
};

class StateDb {
 public:
  // FailedPrecondition naming the directory when it cannot be created or opened.
  static absl::StatusOr<std::unique_ptr<StateDb>> Open(const StateDbOptions& options);
  ~StateDb();
  StateDb(const StateDb&) = delete;
  StateDb& operator=(const StateDb&) = delete;

  // Every catalog entry, in key order. `visit` may stop the scan by returning an error, which
  // Scan returns. A record that does not parse is DataLoss naming its key.
  absl::Status ScanCatalog(
      absl::FunctionRef<absl::Status(std::string_view key, adapt::v1::CatalogEntry entry)> visit)
      const;
  // The same, each entry as its stored bytes (valid during the call), unparsed.
  absl::Status ScanCatalogRecords(
      absl::FunctionRef<absl::Status(std::string_view key, std::string_view record)> visit) const;

  // `key`'s catalog entry: NotFound when there is none, DataLoss when it does not parse.
  absl::StatusOr<adapt::v1::CatalogEntry> ReadCatalog(std::string_view key) const;

  // The state stored for `key` under `entry` (its size and chunk count): DataLoss when a chunk
  // is missing or the sizes disagree.
  absl::StatusOr<std::string> ReadState(std::string_view key,
                                        const adapt::v1::CatalogEntry& entry) const;
  // The read-out stored for `key` under `entry`: NotFound when the entry has none
  // (readout_bytes 0), DataLoss when it is missing or its size disagrees.
  absl::StatusOr<std::string> ReadReadout(std::string_view key,
                                          const adapt::v1::CatalogEntry& entry) const;

  // One write transaction: nothing it does is visible to readers or durable until Commit.
  // Destroying an uncommitted Writer discards it.
  class Writer {
   public:
    ~Writer();
    Writer(Writer&& other) noexcept;
    Writer& operator=(Writer&& other) noexcept;  // discards this one if uncommitted

    // The catalog entry, state and read-out (empty: none) of `key`, replacing what was
    // stored (fills the entry's state_bytes, state_chunks, readout_bytes and
    // state_generation). At most once per key in one Writer (a second put would take the
    // first one's generation for the stored one and remove the state the catalog still
    // names until the commit): a second is refused, FailedPrecondition, and changes nothing.
    absl::Status PutStore(std::string_view key, adapt::v1::CatalogEntry* entry,
                          std::string_view state, std::string_view readout = {});
    // The catalog entry alone (the state, if any, stays).
    absl::Status PutCatalog(std::string_view key, const adapt::v1::CatalogEntry& entry);
    // Removes `key`'s entry and state, unless the stored entry belongs to a later store of the
    // same name: one whose create LSN (CreateLsnOf, catalog_row.h) is past `create_lsn`, the
    // removed store's.
    absl::Status Delete(std::string_view key, uint64_t create_lsn);
    // Bytes of state put so far.
    uint64_t bytes() const { return bytes_; }
    // This write's place in the order of writes (1, 2, ...): one with a larger number began,
    // and so commits, after this one ended.
    uint64_t sequence() const { return sequence_; }
    // Makes everything durable (ResourceExhausted when the map is full: raise map_bytes).
    absl::Status Commit();
    // Discards everything (a no-op once committed or discarded).
    void Abort();

   private:
    friend class StateDb;
    Writer(StateDb* db, MDB_txn* catalog_txn, MDB_txn* state_txn, uint64_t sequence)
        : db_(db), catalog_txn_(catalog_txn), state_txn_(state_txn), sequence_(sequence) {}
    // Removes `key`'s chunks: of every generation but `generation` (kAllBut), of that one
    // alone (kOnly), or all of them (kAll).
    enum class Select { kAllBut, kOnly, kAll };
    absl::Status DeleteChunks(std::string_view key, Select select, uint64_t generation);
    // The generation `key`'s stored entry names (0: none, or the one-environment layout).
    absl::StatusOr<uint64_t> StoredGeneration(std::string_view key);
    StateDb* db_;
    MDB_txn* catalog_txn_;
    MDB_txn* state_txn_;
    uint64_t bytes_ = 0;
    uint64_t sequence_ = 0;
    // Generations this write superseded, for a later write to remove once this one commits;
    // the ones it put, to remove should its catalog commit fail.
    std::vector<std::pair<std::string, uint64_t>> superseded_, written_;
    size_t removed_garbage_ = 0;  // the first garbage entries, which this write removes
  };
  absl::StatusOr<Writer> BeginWrite();

  const std::string& dir() const { return options_.dir; }
  // Records in the states' table (chunks and read-outs, of every generation).
  absl::StatusOr<uint64_t> StateRecords() const;

 private:
  explicit StateDb(StateDbOptions options) : options_(std::move(options)) {}
  // `what` failed with LMDB code `rc`: a status naming the database, the call and the reason.
  absl::Status Error(const char* what, int rc) const;
  // Opens both environments and their tables, moving a one-environment catalog over.
  absl::Status OpenEnvironments();
  absl::Status MoveLegacyCatalog();

  const StateDbOptions options_;
  MDB_env* env_ = nullptr;           // the states
  MDB_env* catalog_env_ = nullptr;   // the catalog
  unsigned int catalog_ = 0;         // MDB_dbi, in catalog_env_
  unsigned int meta_ = 0;            // MDB_dbi, in catalog_env_
  unsigned int state_ = 0;           // MDB_dbi, in env_
  std::atomic<uint64_t> writes_{0};  // Writers begun (counted under LMDB's write lock)
  // The last generation used (under the catalog's write lock, a Writer's).
  uint64_t generation_ = 0;
  // Superseded generations that committed writes left for the next write to remove.
  absl::Mutex garbage_mu_;
  std::vector<std::pair<std::string, uint64_t>> garbage_ ABSL_GUARDED_BY(garbage_mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_
