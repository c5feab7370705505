#include "server/persistence/state_db.h"

#include <lmdb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/core/status_macros.h"

namespace adaptd {
namespace {

// LMDB's reader slots bound concurrent read transactions (loads); each is short.
constexpr unsigned int kMaxReaders = 1024;

MDB_val Val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

// Unmaps the whole pages inside a value just copied out of the map: they are the value's
// own (overflow) pages, clean and backed by the file, so dropping them loses nothing, and a
// process that reads many states does not keep every page it read in its resident set.
void DropPages(const MDB_val& v) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(v.mv_data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(v.mv_data) + v.mv_size) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// "tenant/store" '\0' and the chunk number, big-endian so a store's chunks sort together.
std::string ChunkKey(std::string_view key, uint32_t chunk) {
  std::string out(key);
  out.push_back('\0');
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(chunk >> shift));
  return out;
}

// The chunk number of a store's read-out: after every chunk of its state, so DeleteChunks
// removes it with them.
constexpr uint32_t kReadoutChunk = 0xFFFFFFFFu;

// A read transaction, aborted when it goes out of scope.
struct ReadTxn {
  MDB_txn* txn = nullptr;
  ~ReadTxn() {
    if (txn != nullptr) mdb_txn_abort(txn);
  }
};

}  // namespace

absl::Status StateDb::Error(const char* what, int rc) const {
  const std::string message =
      absl::StrCat("state database ", options_.dir, ": ", what, ": ", mdb_strerror(rc));
  if (rc == MDB_MAP_FULL) {
    return absl::ResourceExhaustedError(
        absl::StrCat(message, " (raise state_map_bytes, --state-map-bytes)"));
  }
  if (rc == ENOSPC) return absl::ResourceExhaustedError(message);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID) {
    return absl::DataLossError(message);
  }
  return absl::UnavailableError(message);
}

absl::StatusOr<std::unique_ptr<StateDb>> StateDb::Open(const StateDbOptions& options) {
  std::unique_ptr<StateDb> db(new StateDb(options));
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("state database ", options.dir, ": ", ec.message()));
  }
  const auto failed = [&](const char* what, int rc) {
    return absl::FailedPreconditionError(db->Error(what, rc).message());
  };
  if (int rc = mdb_env_create(&db->env_); rc != 0) return failed("mdb_env_create", rc);
  mdb_env_set_maxdbs(db->env_, 2);
  mdb_env_set_maxreaders(db->env_, kMaxReaders);
  if (int rc = mdb_env_set_mapsize(db->env_, options.map_bytes); rc != 0) {
    return failed("mdb_env_set_mapsize", rc);
  }
  // MDB_NOTLS: read transactions are not tied to threads (calls hop between threads).
  unsigned int flags = MDB_NOTLS;
  if (!options.sync) flags |= MDB_NOSYNC;
  if (int rc = mdb_env_open(db->env_, options.dir.c_str(), flags, 0640); rc != 0) {
    return failed("mdb_env_open", rc);
  }
  int dead = 0;
  mdb_reader_check(db->env_, &dead);  // slots left by a process that died
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(db->env_, nullptr, 0, &txn); rc != 0) {
    return failed("mdb_txn_begin", rc);
  }
  int rc = mdb_dbi_open(txn, "catalog", MDB_CREATE, &db->catalog_);
  if (rc == 0) rc = mdb_dbi_open(txn, "state", MDB_CREATE, &db->state_);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return failed("mdb_dbi_open", rc);
  }
  if (rc = mdb_txn_commit(txn); rc != 0) return failed("mdb_txn_commit", rc);
  return db;
}

StateDb::~StateDb() {
  if (env_ != nullptr) mdb_env_close(env_);
}

absl::Status StateDb::ScanCatalog(
    absl::FunctionRef<absl::Status(std::string_view key, adapt::v1::CatalogEntry entry)> visit)
    const {
  ReadTxn read;
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(read.txn, catalog_, &cursor); rc != 0) {
    return Error("mdb_cursor_open", rc);
  }
  absl::Status status = absl::OkStatus();
  MDB_val key, value;
  int rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST);
  for (; rc == 0 && status.ok(); rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
    adapt::v1::CatalogEntry entry;
    if (!entry.ParseFromArray(value.mv_data, static_cast<int>(value.mv_size))) {
      status = absl::DataLossError(absl::StrCat("state database ", options_.dir,
                                                ": the catalog entry of ", std::string(View(key)),
                                                " does not parse"));
      break;
    }
    status = visit(View(key), std::move(entry));
  }
  mdb_cursor_close(cursor);
  if (status.ok() && rc != MDB_NOTFOUND) status = Error("mdb_cursor_get", rc);
  return status;
}

absl::StatusOr<std::string> StateDb::ReadState(std::string_view key,
                                               const adapt::v1::CatalogEntry& entry) const {
  ReadTxn read;
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  std::string out;
  out.reserve(entry.state_bytes());
  for (uint32_t chunk = 0; chunk < entry.state_chunks(); ++chunk) {
    const std::string chunk_key = ChunkKey(key, chunk);
    MDB_val k = Val(chunk_key), value;
    const int rc = mdb_get(read.txn, state_, &k, &value);
    if (rc == MDB_NOTFOUND) {
      return absl::DataLossError(absl::StrCat("state database ", options_.dir, ": chunk ", chunk,
                                              " of ", entry.state_chunks(), " of ",
                                              std::string(key), " is missing"));
    }
    if (rc != 0) return Error("mdb_get", rc);
    out.append(View(value));
    DropPages(value);
  }
  if (out.size() != entry.state_bytes()) {
    return absl::DataLossError(absl::StrCat("state database ", options_.dir, ": the state of ",
                                            std::string(key), " holds ", out.size(),
                                            " bytes, its entry says ", entry.state_bytes()));
  }
  return out;
}

absl::StatusOr<std::string> StateDb::ReadReadout(std::string_view key,
                                                 const adapt::v1::CatalogEntry& entry) const {
  if (entry.readout_bytes() == 0) {
    return absl::NotFoundError(absl::StrCat("state database ", options_.dir, ": ", std::string(key),
                                            " has no stored read-out"));
  }
  ReadTxn read;
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  const std::string readout_key = ChunkKey(key, kReadoutChunk);
  MDB_val k = Val(readout_key), value;
  const int rc = mdb_get(read.txn, state_, &k, &value);
  if (rc == MDB_NOTFOUND) {
    return absl::DataLossError(absl::StrCat("state database ", options_.dir, ": the read-out of ",
                                            std::string(key), " is missing"));
  }
  if (rc != 0) return Error("mdb_get", rc);
  if (value.mv_size != entry.readout_bytes()) {
    return absl::DataLossError(absl::StrCat("state database ", options_.dir, ": the read-out of ",
                                            std::string(key), " holds ", value.mv_size,
                                            " bytes, its entry says ", entry.readout_bytes()));
  }
  std::string out(View(value));
  DropPages(value);
  return out;
}

absl::StatusOr<StateDb::Writer> StateDb::BeginWrite() {
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return Error("mdb_txn_begin", rc);
  // LMDB's write lock is held from here until the Writer ends, so the count is the order.
  return Writer(this, txn, writes_.fetch_add(1) + 1);
}

StateDb::Writer::Writer(Writer&& other) noexcept
    : db_(other.db_),
      txn_(std::exchange(other.txn_, nullptr)),
      bytes_(other.bytes_),
      sequence_(other.sequence_) {}

StateDb::Writer& StateDb::Writer::operator=(Writer&& other) noexcept {
  if (this != &other) {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    db_ = other.db_;
    txn_ = std::exchange(other.txn_, nullptr);
    bytes_ = other.bytes_;
    sequence_ = other.sequence_;
  }
  return *this;
}

StateDb::Writer::~Writer() {
  if (txn_ != nullptr) mdb_txn_abort(txn_);
}

absl::Status StateDb::Writer::DeleteChunks(std::string_view key) {
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(txn_, db_->state_, &cursor); rc != 0) {
    return db_->Error("mdb_cursor_open", rc);
  }
  const std::string first = ChunkKey(key, 0);
  const std::string_view prefix(first.data(), key.size() + 1);
  int rc = 0;
  for (;;) {  // seek again after each delete: the store's first remaining chunk
    MDB_val k = Val(first), value;
    rc = mdb_cursor_get(cursor, &k, &value, MDB_SET_RANGE);
    if (rc != 0 || View(k).substr(0, prefix.size()) != prefix) break;
    if (rc = mdb_cursor_del(cursor, 0); rc != 0) break;
  }
  mdb_cursor_close(cursor);
  if (rc != 0 && rc != MDB_NOTFOUND) return db_->Error("mdb_cursor_del", rc);
  return absl::OkStatus();
}

absl::Status StateDb::Writer::PutStore(std::string_view key, adapt::v1::CatalogEntry* entry,
                                       std::string_view state, std::string_view readout) {
  RETURN_IF_ERROR(DeleteChunks(key));
  const size_t chunk_bytes = std::max<size_t>(1, db_->options_.chunk_bytes);
  uint32_t chunks = 0;
  for (size_t at = 0; at < state.size(); at += chunk_bytes, ++chunks) {
    const std::string chunk_key = ChunkKey(key, chunks);
    const size_t n = std::min(chunk_bytes, state.size() - at);
    MDB_val k = Val(chunk_key), value{n, nullptr};
    // MDB_RESERVE: LMDB hands out the space and the chunk is copied in once.
    if (int rc = mdb_put(txn_, db_->state_, &k, &value, MDB_RESERVE); rc != 0) {
      return db_->Error("mdb_put", rc);
    }
    std::memcpy(value.mv_data, state.data() + at, n);
  }
  if (!readout.empty()) {
    const std::string readout_key = ChunkKey(key, kReadoutChunk);
    MDB_val k = Val(readout_key), value = Val(readout);
    if (int rc = mdb_put(txn_, db_->state_, &k, &value, 0); rc != 0) {
      return db_->Error("mdb_put", rc);
    }
  }
  entry->set_state_bytes(state.size());
  entry->set_state_chunks(chunks);
  entry->set_readout_bytes(readout.size());
  bytes_ += state.size() + readout.size();
  return PutCatalog(key, *entry);
}

absl::Status StateDb::Writer::PutCatalog(std::string_view key,
                                         const adapt::v1::CatalogEntry& entry) {
  const std::string record = entry.SerializeAsString();
  MDB_val k = Val(key), value = Val(record);
  if (int rc = mdb_put(txn_, db_->catalog_, &k, &value, 0); rc != 0) {
    return db_->Error("mdb_put", rc);
  }
  return absl::OkStatus();
}

absl::Status StateDb::Writer::Delete(std::string_view key, uint64_t incarnation) {
  MDB_val k = Val(key), value;
  const int rc = mdb_get(txn_, db_->catalog_, &k, &value);
  if (rc == MDB_NOTFOUND) return absl::OkStatus();
  if (rc != 0) return db_->Error("mdb_get", rc);
  adapt::v1::CatalogEntry stored;
  if (stored.ParseFromArray(value.mv_data, static_cast<int>(value.mv_size)) &&
      stored.incarnation() > incarnation) {
    return absl::OkStatus();  // a later store of the same name
  }
  if (int del = mdb_del(txn_, db_->catalog_, &k, nullptr); del != 0 && del != MDB_NOTFOUND) {
    return db_->Error("mdb_del", del);
  }
  return DeleteChunks(key);
}

void StateDb::Writer::Abort() {
  if (txn_ != nullptr) mdb_txn_abort(std::exchange(txn_, nullptr));
}

absl::Status StateDb::Writer::Commit() {
  MDB_txn* txn = std::exchange(txn_, nullptr);
  if (txn == nullptr) return absl::FailedPreconditionError("the state write was already ended");
  if (int rc = mdb_txn_commit(txn); rc != 0) return db_->Error("mdb_txn_commit", rc);
  return absl::OkStatus();
}

}  // namespace adaptd
