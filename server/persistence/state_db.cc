#include "server/persistence/state_db.h"

#include <lmdb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/persistence/catalog_row.h"

namespace adaptd {
namespace {

// LMDB's reader slots bound concurrent read transactions (loads); each is short.
constexpr unsigned int kMaxReaders = 1024;

// The chunk number of a store's read-out: after every chunk of its state.
constexpr uint32_t kReadoutChunk = 0xFFFFFFFFu;

// The `meta` record holding the last generation used.
constexpr std::string_view kGenerationKey = "generation";

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

void PutBigEndian(uint64_t value, int bytes, std::string* out) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>(value >> shift));
  }
}

uint64_t GetBigEndian(std::string_view bytes) {
  uint64_t value = 0;
  for (char c : bytes) value = value << 8 | static_cast<unsigned char>(c);
  return value;
}

// "tenant/store" '\0', the generation and the chunk number, big-endian so that a state's
// chunks sort together; generation 0 (the one-environment layout) has no generation bytes.
std::string ChunkKey(std::string_view key, uint64_t generation, uint32_t chunk) {
  std::string out(key);
  out.push_back('\0');
  if (generation != 0) PutBigEndian(generation, 8, &out);
  PutBigEndian(chunk, 4, &out);
  return out;
}

// The generation of a chunk key under `prefix` ("tenant/store" '\0'), or nullopt when it is
// no chunk key of this store (a longer store name sharing the prefix cannot: names hold no
// '\0').
std::optional<uint64_t> GenerationOf(std::string_view chunk_key, size_t prefix) {
  const size_t rest = chunk_key.size() - prefix;
  if (rest == 4) return 0;
  if (rest == 12) return GetBigEndian(chunk_key.substr(prefix, 8));
  return std::nullopt;
}

// A read transaction, aborted when it goes out of scope.
struct ReadTxn {
  MDB_txn* txn = nullptr;
  ~ReadTxn() {
    if (txn != nullptr) mdb_txn_abort(txn);
  }
};

absl::Status OpenEnv(const std::string& dir, const StateDbOptions& options, MDB_env** env,
                     const std::function<absl::Status(const char*, int)>& failed) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::FailedPreconditionError(absl::StrCat("state database ", dir, ": ", ec.message()));
  if (int rc = mdb_env_create(env); rc != 0) return failed("mdb_env_create", rc);
  mdb_env_set_maxdbs(*env, 2);
  mdb_env_set_maxreaders(*env, kMaxReaders);
  if (int rc = mdb_env_set_mapsize(*env, options.map_bytes); rc != 0) {
    return failed("mdb_env_set_mapsize", rc);
  }
  // MDB_NOTLS: read transactions are not tied to threads (calls hop between threads).
  unsigned int flags = MDB_NOTLS;
  if (!options.sync) flags |= MDB_NOSYNC;
  if (int rc = mdb_env_open(*env, dir.c_str(), flags, 0640); rc != 0) {
    return failed("mdb_env_open", rc);
  }
  int dead = 0;
  mdb_reader_check(*env, &dead);  // slots left by a process that died
  return absl::OkStatus();
}

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
  RETURN_IF_ERROR(db->OpenEnvironments());
  return db;
}

absl::Status StateDb::OpenEnvironments() {
  const auto failed = [&](const char* what, int rc) {
    return absl::FailedPreconditionError(Error(what, rc).message());
  };
  RETURN_IF_ERROR(OpenEnv(options_.dir, options_, &env_, failed));
  RETURN_IF_ERROR(OpenEnv((std::filesystem::path(options_.dir) / "catalog").string(), options_,
                          &catalog_env_, failed));
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(catalog_env_, nullptr, 0, &txn); rc != 0) {
    return failed("mdb_txn_begin", rc);
  }
  int rc = mdb_dbi_open(txn, "catalog", MDB_CREATE, &catalog_);
  if (rc == 0) rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &meta_);
  MDB_val k = Val(kGenerationKey), value;
  if (rc == 0) {
    if (int got = mdb_get(txn, meta_, &k, &value); got == 0) {
      generation_ = GetBigEndian(View(value));
    } else if (got != MDB_NOTFOUND) {
      rc = got;
    }
  }
  if (rc != 0) {
    mdb_txn_abort(txn);
    return failed("mdb_dbi_open", rc);
  }
  if (rc = mdb_txn_commit(txn); rc != 0) return failed("mdb_txn_commit", rc);
  if (rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return failed("mdb_txn_begin", rc);
  if (rc = mdb_dbi_open(txn, "state", MDB_CREATE, &state_); rc != 0) {
    mdb_txn_abort(txn);
    return failed("mdb_dbi_open", rc);
  }
  if (rc = mdb_txn_commit(txn); rc != 0) return failed("mdb_txn_commit", rc);
  return MoveLegacyCatalog();
}

absl::Status StateDb::MoveLegacyCatalog() {
  const auto failed = [&](const char* what, int rc) {
    return absl::FailedPreconditionError(
        absl::StrCat(Error(what, rc).message(), " (moving the catalog into its own file)"));
  };
  MDB_txn* state_txn = nullptr;
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &state_txn); rc != 0) {
    return failed("mdb_txn_begin", rc);
  }
  MDB_dbi legacy = 0;
  if (int rc = mdb_dbi_open(state_txn, "catalog", 0, &legacy); rc != 0) {
    mdb_txn_abort(state_txn);
    if (rc == MDB_NOTFOUND) return absl::OkStatus();  // nothing to move
    return failed("mdb_dbi_open", rc);
  }
  // Copy every entry, then drop the old table: a start cut short between the two copies
  // again (the same entries), and the entries are only ever written in their new place.
  MDB_txn* catalog_txn = nullptr;
  if (int rc = mdb_txn_begin(catalog_env_, nullptr, 0, &catalog_txn); rc != 0) {
    mdb_txn_abort(state_txn);
    return failed("mdb_txn_begin", rc);
  }
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(state_txn, legacy, &cursor);
  if (rc == 0) {
    MDB_val key, value;
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      if (rc = mdb_put(catalog_txn, catalog_, &key, &value, 0); rc != 0) break;
    }
    mdb_cursor_close(cursor);
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  if (rc == 0)
    rc = mdb_txn_commit(catalog_txn);
  else
    mdb_txn_abort(catalog_txn);
  if (rc == 0) rc = mdb_drop(state_txn, legacy, /*del=*/1);
  if (rc == 0) {
    rc = mdb_txn_commit(state_txn);
  } else {
    mdb_txn_abort(state_txn);
  }
  if (rc != 0) return failed("copying the catalog", rc);
  return absl::OkStatus();
}

StateDb::~StateDb() {
  if (catalog_env_ != nullptr) mdb_env_close(catalog_env_);
  if (env_ != nullptr) mdb_env_close(env_);
}

absl::Status StateDb::ScanCatalog(
    absl::FunctionRef<absl::Status(std::string_view key, adapt::v1::CatalogEntry entry)> visit)
    const {
  return ScanCatalogRecords([&](std::string_view key, std::string_view record) {
    adapt::v1::CatalogEntry entry;
    if (!entry.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
      return absl::DataLossError(absl::StrCat("state database ", options_.dir,
                                              ": the catalog entry of ", std::string(key),
                                              " does not parse"));
    }
    return visit(key, std::move(entry));
  });
}

absl::Status StateDb::ScanCatalogRecords(
    absl::FunctionRef<absl::Status(std::string_view key, std::string_view record)> visit) const {
  ReadTxn read;
  if (int rc = mdb_txn_begin(catalog_env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
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
    status = visit(View(key), View(value));
  }
  mdb_cursor_close(cursor);
  if (status.ok() && rc != MDB_NOTFOUND) status = Error("mdb_cursor_get", rc);
  return status;
}

absl::StatusOr<adapt::v1::CatalogEntry> StateDb::ReadCatalog(std::string_view key) const {
  ReadTxn read;
  if (int rc = mdb_txn_begin(catalog_env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  MDB_val k = Val(key), value;
  const int rc = mdb_get(read.txn, catalog_, &k, &value);
  if (rc == MDB_NOTFOUND) {
    return absl::NotFoundError(
        absl::StrCat("state database ", options_.dir, ": no entry for ", std::string(key)));
  }
  if (rc != 0) return Error("mdb_get", rc);
  adapt::v1::CatalogEntry entry;
  if (!entry.ParseFromArray(value.mv_data, static_cast<int>(value.mv_size))) {
    return absl::DataLossError(absl::StrCat("state database ", options_.dir, ": the entry of ",
                                            std::string(key), " does not parse"));
  }
  return entry;
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
    const std::string chunk_key = ChunkKey(key, entry.state_generation(), chunk);
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
  const std::string readout_key = ChunkKey(key, entry.state_generation(), kReadoutChunk);
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

absl::StatusOr<uint64_t> StateDb::StateRecords() const {
  ReadTxn read;
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read.txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  MDB_stat stat;
  if (int rc = mdb_stat(read.txn, state_, &stat); rc != 0) return Error("mdb_stat", rc);
  return stat.ms_entries;
}

absl::StatusOr<StateDb::Writer> StateDb::BeginWrite() {
  // Always the catalog's lock first, then the states': writers never wait in a cycle.
  MDB_txn* catalog_txn = nullptr;
  if (int rc = mdb_txn_begin(catalog_env_, nullptr, 0, &catalog_txn); rc != 0) {
    return Error("mdb_txn_begin", rc);
  }
  MDB_txn* state_txn = nullptr;
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &state_txn); rc != 0) {
    mdb_txn_abort(catalog_txn);
    return Error("mdb_txn_begin", rc);
  }
  // LMDB's write locks are held from here until the Writer ends, so the count is the order.
  Writer writer(this, catalog_txn, state_txn, writes_.fetch_add(1) + 1);
  // What earlier committed writes superseded goes with this one (or stays for the next).
  std::vector<std::pair<std::string, uint64_t>> garbage;
  {
    absl::MutexLock lock(&garbage_mu_);
    garbage = garbage_;
  }
  for (const auto& [key, generation] : garbage) {
    RETURN_IF_ERROR(writer.DeleteChunks(key, Writer::Select::kOnly, generation));
  }
  writer.removed_garbage_ = garbage.size();
  return writer;
}

StateDb::Writer::Writer(Writer&& other) noexcept
    : db_(other.db_),
      catalog_txn_(std::exchange(other.catalog_txn_, nullptr)),
      state_txn_(std::exchange(other.state_txn_, nullptr)),
      bytes_(other.bytes_),
      sequence_(other.sequence_),
      superseded_(std::move(other.superseded_)),
      written_(std::move(other.written_)),
      removed_garbage_(other.removed_garbage_) {}

StateDb::Writer& StateDb::Writer::operator=(Writer&& other) noexcept {
  if (this != &other) {
    Abort();
    db_ = other.db_;
    catalog_txn_ = std::exchange(other.catalog_txn_, nullptr);
    state_txn_ = std::exchange(other.state_txn_, nullptr);
    bytes_ = other.bytes_;
    sequence_ = other.sequence_;
    superseded_ = std::move(other.superseded_);
    written_ = std::move(other.written_);
    removed_garbage_ = other.removed_garbage_;
  }
  return *this;
}

StateDb::Writer::~Writer() { Abort(); }

absl::Status StateDb::Writer::DeleteChunks(std::string_view key, Select select,
                                           uint64_t generation) {
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(state_txn_, db_->state_, &cursor); rc != 0) {
    return db_->Error("mdb_cursor_open", rc);
  }
  std::string prefix(key);
  prefix.push_back('\0');
  std::string from = prefix;
  int rc = 0;
  for (;;) {  // seek again after each delete, from the key deleted
    MDB_val k = Val(from), value;
    rc = mdb_cursor_get(cursor, &k, &value, MDB_SET_RANGE);
    if (rc != 0 || View(k).substr(0, prefix.size()) != prefix) break;
    from = std::string(View(k));
    const std::optional<uint64_t> found = GenerationOf(from, prefix.size());
    const bool chosen = found.has_value() && (select == Select::kAll ||
                                              (select == Select::kOnly) == (*found == generation));
    if (chosen) {
      if (rc = mdb_cursor_del(cursor, 0); rc != 0) break;
    } else {
      from.push_back('\0');  // the smallest key after this one
    }
  }
  mdb_cursor_close(cursor);
  if (rc != 0 && rc != MDB_NOTFOUND) return db_->Error("mdb_cursor_del", rc);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> StateDb::Writer::StoredGeneration(std::string_view key) {
  MDB_val k = Val(key), value;
  const int rc = mdb_get(catalog_txn_, db_->catalog_, &k, &value);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc != 0) return db_->Error("mdb_get", rc);
  adapt::v1::CatalogEntry stored;
  if (!stored.ParseFromArray(value.mv_data, static_cast<int>(value.mv_size))) return 0;
  return stored.state_generation();
}

absl::Status StateDb::Writer::PutStore(std::string_view key, adapt::v1::CatalogEntry* entry,
                                       std::string_view state, std::string_view readout) {
  for (const auto& [written, generation] : written_) {
    if (written == key) {
      return absl::FailedPreconditionError(absl::StrCat(
          "state database ", db_->options_.dir, ": ", std::string(key),
          " is put twice in one write (the second would remove the state the first names)"));
    }
  }
  // The stored generation stays whole until the catalog names the new one; any other (one
  // a crash left before its catalog commit) goes now.
  ASSIGN_OR_RETURN(const uint64_t live, StoredGeneration(key));
  RETURN_IF_ERROR(DeleteChunks(key, Select::kAllBut, live));
  const uint64_t generation = ++db_->generation_;
  const size_t chunk_bytes = std::max<size_t>(1, db_->options_.chunk_bytes);
  uint32_t chunks = 0;
  for (size_t at = 0; at < state.size(); at += chunk_bytes, ++chunks) {
    const std::string chunk_key = ChunkKey(key, generation, chunks);
    const size_t n = std::min(chunk_bytes, state.size() - at);
    MDB_val k = Val(chunk_key), value{n, nullptr};
    // MDB_RESERVE: LMDB hands out the space and the chunk is copied in once.
    if (int rc = mdb_put(state_txn_, db_->state_, &k, &value, MDB_RESERVE); rc != 0) {
      return db_->Error("mdb_put", rc);
    }
    std::memcpy(value.mv_data, state.data() + at, n);
  }
  if (!readout.empty()) {
    const std::string readout_key = ChunkKey(key, generation, kReadoutChunk);
    MDB_val k = Val(readout_key), value = Val(readout);
    if (int rc = mdb_put(state_txn_, db_->state_, &k, &value, 0); rc != 0) {
      return db_->Error("mdb_put", rc);
    }
  }
  entry->set_state_bytes(state.size());
  entry->set_state_chunks(chunks);
  entry->set_readout_bytes(readout.size());
  entry->set_state_generation(generation);
  bytes_ += state.size() + readout.size();
  written_.emplace_back(std::string(key), generation);
  superseded_.emplace_back(std::string(key), live);
  return PutCatalog(key, *entry);
}

absl::Status StateDb::Writer::PutCatalog(std::string_view key,
                                         const adapt::v1::CatalogEntry& entry) {
  const std::string record = entry.SerializeAsString();
  MDB_val k = Val(key), value = Val(record);
  if (int rc = mdb_put(catalog_txn_, db_->catalog_, &k, &value, 0); rc != 0) {
    return db_->Error("mdb_put", rc);
  }
  return absl::OkStatus();
}

absl::Status StateDb::Writer::Delete(std::string_view key, uint64_t create_lsn) {
  MDB_val k = Val(key), value;
  const int rc = mdb_get(catalog_txn_, db_->catalog_, &k, &value);
  if (rc == MDB_NOTFOUND) return absl::OkStatus();
  if (rc != 0) return db_->Error("mdb_get", rc);
  adapt::v1::CatalogEntry stored;
  if (stored.ParseFromArray(value.mv_data, static_cast<int>(value.mv_size)) &&
      CreateLsnOf(stored) > create_lsn) {
    return absl::OkStatus();  // a later store of the same name
  }
  if (int del = mdb_del(catalog_txn_, db_->catalog_, &k, nullptr);
      del != 0 && del != MDB_NOTFOUND) {
    return db_->Error("mdb_del", del);
  }
  // The states commit first: should the catalog's commit then fail, its entry names a state
  // that is gone, but the store's delete record is still in the log (the journal truncates
  // it only after a checkpoint that removed the store), and deletes the store again.
  return DeleteChunks(key, Select::kAll, 0);
}

void StateDb::Writer::Abort() {
  if (state_txn_ != nullptr) mdb_txn_abort(std::exchange(state_txn_, nullptr));
  if (catalog_txn_ != nullptr) mdb_txn_abort(std::exchange(catalog_txn_, nullptr));
}

absl::Status StateDb::Writer::Commit() {
  if (state_txn_ == nullptr || catalog_txn_ == nullptr) {
    return absl::FailedPreconditionError("the state write was already ended");
  }
  // The states, then the catalog that names them (with the last generation used).
  std::string last;
  PutBigEndian(db_->generation_, 8, &last);
  MDB_val k = Val(kGenerationKey), value = Val(last);
  if (int rc = mdb_put(catalog_txn_, db_->meta_, &k, &value, 0); rc != 0) {
    Abort();
    return db_->Error("mdb_put", rc);
  }
  if (int rc = mdb_txn_commit(std::exchange(state_txn_, nullptr)); rc != 0) {
    Abort();
    return db_->Error("mdb_txn_commit", rc);
  }
  if (db_->options_.between_commits) {
    if (absl::Status stop = db_->options_.between_commits(); !stop.ok()) {
      Abort();
      return stop;
    }
  }
  {
    // The states are in: the garbage this write removed is gone (later writes only append).
    absl::MutexLock lock(&db_->garbage_mu_);
    auto& garbage = db_->garbage_;
    garbage.erase(garbage.begin(), garbage.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                         removed_garbage_, garbage.size())));
  }
  const int rc = mdb_txn_commit(std::exchange(catalog_txn_, nullptr));
  absl::MutexLock lock(&db_->garbage_mu_);
  if (rc != 0) {
    // The catalog still names the earlier states: what this write put is garbage.
    for (auto& written : written_) db_->garbage_.push_back(std::move(written));
    return db_->Error("mdb_txn_commit", rc);
  }
  for (auto& superseded : superseded_) db_->garbage_.push_back(std::move(superseded));
  return absl::OkStatus();
}

}  // namespace adaptd
