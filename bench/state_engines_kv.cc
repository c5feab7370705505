// The two key-value engines of state_engines.h: LMDB and RocksDB, each tuned for few large
// writes per checkpoint, whole-value reads and a catalog scan, with no engine log of its own.
#include <lmdb.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <sys/mman.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "bench/state_engine_util.h"
#include "bench/state_engines.h"
#include "server/base/status_macros.h"

namespace adaptd::bench {
namespace {

std::string KeyOf(char kind, std::string_view tenant, std::string_view store) {
  return Cat(std::string_view(&kind, 1), "/", tenant, "/", store);
}

// ---- LMDB ----------------------------------------------------------------------------------

class LmdbEngine final : public StateEngine {
 public:
  explicit LmdbEngine(const EngineConfig& config) : config_(config) {
    // The map only reserves address space; the file grows with the data. Room for the live
    // data three times over (old pages are reused only once no reader holds them) plus slack.
    map_bytes_ = std::max<uint64_t>(uint64_t{16} << 30, 3 * config.expected_bytes + (8ull << 30));
  }
  ~LmdbEngine() override { Close(); }

  std::string Name() const override { return "lmdb"; }

  std::string Settings() const override {
    return Cat("map size ", map_bytes_ >> 30, " GiB; MDB_NOTLS",
               config_.lmdb_readahead
                   ? " with OS readahead"
                   : " | MDB_NORDAHEAD, madvise(WILLNEED) on a value's pages before reading it",
               "; synced commits (no MDB_NOSYNC); one write txn per checkpoint; one reused read "
               "txn (reset/renew)");
  }

  absl::Status Open() override {
    std::filesystem::create_directories(config_.dir);
    if (int rc = mdb_env_create(&env_); rc != 0) return Error("mdb_env_create", rc);
    if (int rc = mdb_env_set_mapsize(env_, map_bytes_); rc != 0) {
      return Error("mdb_env_set_mapsize", rc);
    }
    // No OS readahead by default (it would fetch neighbouring stores' pages); ReadValue asks
    // for the pages of the value it reads instead.
    const unsigned flags = MDB_NOTLS | (config_.lmdb_readahead ? 0 : MDB_NORDAHEAD);
    if (int rc = mdb_env_open(env_, config_.dir.c_str(), flags, 0644); rc != 0) {
      return Error("mdb_env_open", rc);
    }
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return Error("txn_begin", rc);
    if (int rc = mdb_dbi_open(txn, nullptr, 0, &dbi_); rc != 0) {
      mdb_txn_abort(txn);
      return Error("mdb_dbi_open", rc);
    }
    if (int rc = mdb_txn_commit(txn); rc != 0) return Error("txn_commit", rc);
    return absl::OkStatus();
  }

  void Close() override {
    if (env_ == nullptr) return;
    if (write_txn_ != nullptr) mdb_txn_abort(write_txn_);
    if (read_txn_ != nullptr) mdb_txn_abort(read_txn_);
    write_txn_ = read_txn_ = nullptr;
    mdb_env_close(env_);
    env_ = nullptr;
  }

  absl::Status WriteStore(std::string_view tenant, std::string_view store, std::string_view catalog,
                          std::string_view value) override {
    if (write_txn_ == nullptr) {
      if (int rc = mdb_txn_begin(env_, nullptr, 0, &write_txn_); rc != 0) {
        return Error("txn_begin", rc);
      }
    }
    if (!catalog.empty()) RETURN_IF_ERROR(Put(KeyOf('c', tenant, store), catalog));
    return Put(KeyOf('s', tenant, store), value);
  }

  absl::Status Commit() override {
    if (write_txn_ == nullptr) return absl::OkStatus();
    const int rc = mdb_txn_commit(write_txn_);  // writes the pages, fsyncs, writes the meta
    write_txn_ = nullptr;
    return rc == 0 ? absl::OkStatus() : Error("mdb_txn_commit", rc);
  }

  absl::Status ReadValue(std::string_view tenant, std::string_view store,
                         std::string* value) override {
    RETURN_IF_ERROR(BeginRead());
    const std::string key = KeyOf('s', tenant, store);
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{};
    const int rc = mdb_get(read_txn_, dbi_, &k, &v);
    if (rc == 0) {
      // Without OS readahead a value spanning many pages would fault in one page at a time;
      // ask for exactly its pages at once instead.
      if (!config_.lmdb_readahead && v.mv_size > 2 * kPage) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(v.mv_data) & ~(kPage - 1);
        const uintptr_t end = reinterpret_cast<uintptr_t>(v.mv_data) + v.mv_size;
        (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED);
      }
      value->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    }
    mdb_txn_reset(read_txn_);
    return rc == 0 ? absl::OkStatus() : Error(Cat("mdb_get ", key), rc);
  }

  absl::Status ScanCatalog(
      const std::function<void(std::string_view, std::string_view)>& visit) override {
    RETURN_IF_ERROR(BeginRead());
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(read_txn_, dbi_, &cursor);
    std::string prefix = "c/";
    MDB_val k{prefix.size(), prefix.data()}, v{};
    for (rc = rc != 0 ? rc : mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      const std::string_view key(static_cast<const char*>(k.mv_data), k.mv_size);
      if (!key.starts_with(prefix)) break;
      visit(key.substr(2), std::string_view(static_cast<const char*>(v.mv_data), v.mv_size));
    }
    if (cursor != nullptr) mdb_cursor_close(cursor);
    mdb_txn_reset(read_txn_);
    return rc == 0 || rc == MDB_NOTFOUND ? absl::OkStatus() : Error("catalog cursor", rc);
  }

 private:
  absl::Status Put(const std::string& key, std::string_view data) {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{data.size(), const_cast<char*>(data.data())};
    const int rc = mdb_put(write_txn_, dbi_, &k, &v, 0);
    return rc == 0 ? absl::OkStatus() : Error(Cat("mdb_put ", key), rc);
  }

  absl::Status BeginRead() {
    const int rc = read_txn_ == nullptr ? mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read_txn_)
                                        : mdb_txn_renew(read_txn_);
    return rc == 0 ? absl::OkStatus() : Error("read txn", rc);
  }

  absl::Status Error(std::string_view what, int rc) const {
    return absl::InternalError(Cat("lmdb ", config_.dir, ": ", what, ": ", mdb_strerror(rc)));
  }

  static constexpr uintptr_t kPage = 4096;
  EngineConfig config_;
  uint64_t map_bytes_ = 0;
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  MDB_txn* write_txn_ = nullptr;
  MDB_txn* read_txn_ = nullptr;
};

// ---- RocksDB -------------------------------------------------------------------------------

class RocksDbEngine final : public StateEngine {
 public:
  explicit RocksDbEngine(const EngineConfig& config) : config_(config) {
    options_.create_if_missing = true;
    options_.max_background_jobs = 2;  // the machine's cores
    // Room for several large values per memtable, and a second one to fill while one flushes.
    options_.write_buffer_size = static_cast<size_t>(config.rocksdb_memtable_mib) << 20;
    options_.max_write_buffer_number = 3;
    options_.level_compaction_dynamic_level_bytes = true;
    // Values are large and incompressible: keep them out of the LSM tree, in blob files that
    // compaction rewrites only to drop garbage.
    options_.enable_blob_files = true;
    options_.min_blob_size = 4096;
    options_.blob_file_size = 256 << 20;
    options_.blob_compression_type = rocksdb::kNoCompression;
    options_.enable_blob_garbage_collection = true;
    rocksdb::BlockBasedTableOptions table;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.block_cache = rocksdb::NewLRUCache(256 << 20);
    options_.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    write_options_.disableWAL = true;  // adaptd's own log covers the writes
  }
  ~RocksDbEngine() override { Close(); }

  std::string Name() const override { return "rocksdb"; }

  std::string Settings() const override {
    return Cat(
        "disableWAL writes; Flush(wait) per checkpoint (syncs SST, blob files and MANIFEST); "
        "blob files (min_blob_size 4096, 256 MiB files, blob GC on, age cutoff 0.25); bloom "
        "10 bits/key; 256 MiB LRU block cache; ",
        config_.rocksdb_memtable_mib,
        " MiB memtable (3 at most); 2 background jobs; dynamic "
        "level bytes; SST compression default (Snappy), blobs uncompressed");
  }

  absl::Status Open() override {
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options_, config_.dir, &db);
    if (!s.ok()) return Error("open", s);
    db_.reset(db);
    return absl::OkStatus();
  }

  void Close() override {
    if (db_ == nullptr) return;
    (void)db_->Close();
    db_.reset();
  }

  absl::Status WriteStore(std::string_view tenant, std::string_view store, std::string_view catalog,
                          std::string_view value) override {
    rocksdb::WriteBatch batch;
    if (!catalog.empty()) batch.Put(KeyOf('c', tenant, store), catalog);
    batch.Put(KeyOf('s', tenant, store), value);
    rocksdb::Status s = db_->Write(write_options_, &batch);
    return s.ok() ? absl::OkStatus() : Error("write", s);
  }

  absl::Status Commit() override {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    rocksdb::Status s = db_->Flush(flush);
    return s.ok() ? absl::OkStatus() : Error("flush", s);
  }

  absl::Status ReadValue(std::string_view tenant, std::string_view store,
                         std::string* value) override {
    rocksdb::PinnableSlice slice;
    const std::string key = KeyOf('s', tenant, store);
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), key, &slice);
    if (!s.ok()) return Error(Cat("get ", key), s);
    value->assign(slice.data(), slice.size());
    return absl::OkStatus();
  }

  absl::Status ScanCatalog(
      const std::function<void(std::string_view, std::string_view)>& visit) override {
    rocksdb::ReadOptions read;
    const rocksdb::Slice upper("c0");  // '0' follows '/'
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
    for (it->Seek("c/"); it->Valid(); it->Next()) {
      visit(std::string_view(it->key().data() + 2, it->key().size() - 2),
            it->value().ToStringView());
    }
    return it->status().ok() ? absl::OkStatus() : Error("catalog scan", it->status());
  }

  absl::Status CompactAll() override {
    rocksdb::CompactRangeOptions compact;
    compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    compact.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
    compact.blob_garbage_collection_age_cutoff = 1.0;  // every blob file may be rewritten
    rocksdb::Status s = db_->CompactRange(compact, nullptr, nullptr);
    return s.ok() ? absl::OkStatus() : Error("compact range", s);
  }

  void WaitIdle() override {
    for (;;) {
      uint64_t compacting = 0, flushing = 0, pending = 0;
      db_->GetIntProperty("rocksdb.num-running-compactions", &compacting);
      db_->GetIntProperty("rocksdb.num-running-flushes", &flushing);
      db_->GetIntProperty("rocksdb.compaction-pending", &pending);
      if (compacting + flushing + pending == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  absl::Status Error(std::string_view what, const rocksdb::Status& s) const {
    return absl::InternalError(Cat("rocksdb ", config_.dir, ": ", what, ": ", s.ToString()));
  }

  EngineConfig config_;
  rocksdb::Options options_;
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

std::unique_ptr<StateEngine> MakeLmdbEngine(const EngineConfig& config) {
  return std::make_unique<LmdbEngine>(config);
}

std::unique_ptr<StateEngine> MakeRocksDbEngine(const EngineConfig& config) {
  return std::make_unique<RocksDbEngine>(config);
}

absl::StatusOr<std::unique_ptr<StateEngine>> MakeStateEngine(std::string_view name,
                                                             const EngineConfig& config) {
  if (name == "lmdb") return MakeLmdbEngine(config);
  if (name == "rocksdb") return MakeRocksDbEngine(config);
  if (name == "files") return MakeFileEngine(config);
  return absl::InvalidArgumentError(
      Cat("--engine: unknown engine '", name, "' (lmdb, rocksdb, files or all)"));
}

}  // namespace adaptd::bench
