// StateDb: the per-store durable state under data_dir/state, in one LMDB environment (why
// LMDB: docs/DURABILITY.md, "The state database"). Two tables:
//   catalog: "tenant/store" → adapt.v1.CatalogEntry (spec, incarnation, the LSN the state
//            holds, a failure reason, the state's size, the store's description);
//   state:   "tenant/store" '\0' <4-byte big-endian chunk number> → up to chunk_bytes of the
//            store's snapshot file (server/core/snapshot_file.h), so a state has no size limit
//            but the map's; chunk number 0xFFFFFFFF holds the store's published read-out
//            (an adapt.v1.StoredReadout), written with the state, when it has one.
// Start-up reads the catalog alone; a store's state is read when the store is loaded, and
// its read-out alone when a read needs only that (the warm tier).
//
// Thread-safety: every method may be called concurrently. Reads never block and never wait
// for a writer. Writes go through a Writer, one at a time (BeginWrite waits for the previous
// one to end); a Writer belongs to the thread that began it.
#ifndef ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_
#define ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "adapt/v1/snapshot.pb.h"

struct MDB_env;
struct MDB_txn;

namespace adaptd {

struct StateDbOptions {
  std::string dir;                         // created when missing
  uint64_t map_bytes = uint64_t{1} << 40;  // the largest the database may grow (virtual)
  size_t chunk_bytes = size_t{64} << 20;   // a state is stored in pieces of this size
  bool sync = true;                        // fsync at each commit (off only for tests)
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
    // stored (fills the entry's state_bytes, state_chunks and readout_bytes).
    absl::Status PutStore(std::string_view key, adapt::v1::CatalogEntry* entry,
                          std::string_view state, std::string_view readout = {});
    // The catalog entry alone (the state, if any, stays).
    absl::Status PutCatalog(std::string_view key, const adapt::v1::CatalogEntry& entry);
    // Removes `key`'s entry and state, unless the stored entry belongs to a later incarnation
    // (a store of the same name created after the one being removed).
    absl::Status Delete(std::string_view key, uint64_t incarnation);
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
    Writer(const StateDb* db, MDB_txn* txn, uint64_t sequence)
        : db_(db), txn_(txn), sequence_(sequence) {}
    absl::Status DeleteChunks(std::string_view key);
    const StateDb* db_;
    MDB_txn* txn_;
    uint64_t bytes_ = 0;
    uint64_t sequence_ = 0;
  };
  absl::StatusOr<Writer> BeginWrite();

  const std::string& dir() const { return options_.dir; }

 private:
  explicit StateDb(StateDbOptions options) : options_(std::move(options)) {}
  // `what` failed with LMDB code `rc`: a status naming the database, the call and the reason.
  absl::Status Error(const char* what, int rc) const;

  const StateDbOptions options_;
  MDB_env* env_ = nullptr;
  unsigned int catalog_ = 0;  // MDB_dbi
  unsigned int state_ = 0;
  std::atomic<uint64_t> writes_{0};  // Writers begun (counted under LMDB's write lock)
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_STATE_DB_H_
