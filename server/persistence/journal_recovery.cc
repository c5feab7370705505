// Journal::Open: start-up recovery. Loads each store's state from the state database (and,
// once, from the snapshot files of data directories written before it: data_dir/snapshots,
// moved into the database by the first checkpoint and then removed), replays the log records
// after the state's LSN in LSN order, drops a torn last record (truncating it away), and turns
// every store whose state or records cannot be read into a FailedStore with the reason,
// recorded in its catalog entry so it stays failed after the log is truncated. A write record
// whose commit fails is skipped: it failed the same way when it was logged (journal.h, Commit)
// and was never acknowledged.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/base/status_macros.h"
#include "server/persistence/catalog_row.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/file_util.h"
#include "server/persistence/journal.h"
#include "server/persistence/log_format.h"
#include "server/persistence/replay.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

namespace adaptd {

namespace fs = std::filesystem;

class Recovery {
 public:
  Recovery(const JournalOptions& options, Env* env, kernels::Backend* backend, StateDb* db)
      : options_(options), env_(env), backend_(backend), db_(db) {}

  absl::Status LoadCatalog();
  // Snapshot files of the layout before the state database; true when there were any.
  absl::StatusOr<bool> LoadLegacySnapshots();
  absl::Status ReplayLog(bool* had_segments);
  void MarkDamage();
  // Solves each store's last replayed compile, once (replay.h, FinishReplay).
  void SolveCompiles();
  uint64_t max_lsn() const { return max_lsn_; }
  // After Finish: whether any store's state, or a deletion, is only in the log.
  bool left_in_log() const { return left_in_log_; }
  void Finish(Journal* journal, std::vector<RecoveredStore>* recovered);

 private:
  struct State {
    std::string tenant, name;
    std::shared_ptr<Store> store;
    adapt::v1::StoreSpec spec;
    // The store's id (journal.h, Incarnation) and the LSN of its create record (its place in
    // the log's order), then the last record it holds.
    uint64_t incarnation = 0, create_lsn = 0, last_lsn = 0;
    // Made from a corrupt record of a store not known before: its next record names its
    // incarnation.
    bool incarnation_unknown = false;
    std::string failure;
    bool marked = false;  // the failure is in the state database
    std::vector<std::string> ids;
    uint64_t dirty_since = 0;  // the first record not in the state database (0: none)
    // From the state database: its entry as stored (a serialized CatalogEntry, read by
    // ReadCatalogRow, parsed only when needed), and whether the state is still only there (a
    // cold store; it is read when a log record needs it, or when a call does).
    std::string record;
    adapt::v1::StoreKind kind = adapt::v1::STORE_KIND_UNSPECIFIED;
    std::string base;  // spec.base of a cold store
    bool cold = false;
    bool pinned = false;
    bool compiled = false;  // a compile record was replayed: its solve is left for the end
  };
  struct Found {
    uint64_t incarnation = 0;
    bool snap = false, failed = false;
  };

  void Fail(State* state, std::string reason) {
    if (state->failure.empty()) state->failure = std::move(reason);
  }
  // The stored entry of a store from the catalog (empty for one only in the log).
  static adapt::v1::CatalogEntry CatalogOf(const State& state) {
    adapt::v1::CatalogEntry entry;
    (void)entry.ParseFromString(state.record);  // it parsed when the catalog was read
    return entry;
  }
  void Apply(const LogFrame& frame);
  // Decodes and restores a stored state (file) into `state`, or fails it naming `where`.
  void Restore(State* state, const std::string& where, absl::StatusOr<std::string> file);
  void ApplyWrite(State* state, uint64_t lsn, const adapt::v1::WalWrite& write);
  std::string PathOf(const State& state, const char* suffix) const {
    return (fs::path(options_.data_dir) / "snapshots" / state.tenant /
            absl::StrCat(state.name, "~", state.incarnation, suffix))
        .string();
  }

  const JournalOptions& options_;
  Env* const env_;
  kernels::Backend* backend_;
  StateDb* db_;
  std::map<std::string, State> states_;
  std::vector<std::string> compiled_;  // keys whose state replayed a compile record, once each
  std::vector<Journal::PendingDelete> deletes_;  // deleted by replayed records
  // LSN ranges the log could not attribute to a store.
  std::vector<std::pair<uint64_t, uint64_t>> damage_;
  uint64_t max_lsn_ = 0;
  bool left_in_log_ = false;
};

void Recovery::Restore(State* state, const std::string& where, absl::StatusOr<std::string> file) {
  if (!file.ok()) {
    Fail(state, absl::StrCat(where, ": ", file.status().message()));
    return;
  }
  Journal::Restored restored;
  const absl::Status status =
      Journal::RestoreState(where, *file, state->incarnation, backend_, &restored);
  if (restored.spec.ByteSizeLong() > 0) state->spec = restored.spec;
  if (!status.ok()) {
    Fail(state, std::string(status.message()));
    return;
  }
  state->last_lsn = restored.lsn;
  state->ids = std::move(restored.ids);
  state->store = std::move(restored.store);
}

absl::Status Recovery::LoadCatalog() {
  return db_->ScanCatalogRecords([&](std::string_view key, std::string_view record) {
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) return absl::OkStatus();
    State state;
    state.tenant = std::string(key.substr(0, slash));
    state.name = std::string(key.substr(slash + 1));
    // A healthy entry in the server's form is read at the wire level alone: its spec and
    // description are parsed when a call or a log record needs them.
    const std::optional<CatalogRow> row = ReadCatalogRow(record);
    if (row.has_value() && row->failure.empty()) {
      state.incarnation = row->incarnation;
      state.create_lsn = row->create_lsn;
      state.last_lsn = row->lsn;
      state.pinned = row->pinned;
      state.kind = row->kind;
      state.base = std::string(row->base);
      state.cold = true;  // read when needed: start-up reads the catalog alone
      state.record = std::string(record);
    } else {
      adapt::v1::CatalogEntry entry;
      if (!entry.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
        return absl::DataLossError(absl::StrCat("state database ", db_->dir(),
                                                ": the catalog entry of ", std::string(key),
                                                " does not parse"));
      }
      state.incarnation = entry.incarnation();
      state.create_lsn = CreateLsnOf(entry);
      state.last_lsn = entry.lsn();
      state.spec = entry.spec();
      state.kind = entry.spec().kind();
      state.base = entry.spec().base();
      state.pinned = entry.pinned();
      if (!entry.failure().empty()) {
        Fail(&state, entry.failure());
        state.marked = true;
      } else {
        state.cold = true;
      }
      state.record = entry.SerializeAsString();
    }
    max_lsn_ = std::max(max_lsn_, state.last_lsn);
    // The scan is in key order: each entry goes at the end, found without a search.
    states_.insert_or_assign(states_.end(), std::string(key), std::move(state));
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> Recovery::LoadLegacySnapshots() {
  if (absl::Status made = env_->CreateDirs(options_.data_dir); !made.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("data_dir: ", made.message()));
  }
  ASSIGN_OR_RETURN(const std::vector<DirEntry> top, env_->ListDir(options_.data_dir));
  if (std::none_of(top.begin(), top.end(),
                   [](const DirEntry& e) { return e.is_directory && e.name == "snapshots"; })) {
    return false;
  }
  const std::string root = (fs::path(options_.data_dir) / "snapshots").string();
  std::map<std::pair<std::string, std::string>, std::map<uint64_t, Found>> files;
  ASSIGN_OR_RETURN(const std::vector<DirEntry> tenants, env_->ListDir(root));
  for (const DirEntry& tenant_dir : tenants) {
    if (!tenant_dir.is_directory) continue;
    const std::string& tenant = tenant_dir.name;
    const std::string dir = (fs::path(root) / tenant).string();
    ASSIGN_OR_RETURN(const std::vector<DirEntry> names, env_->ListDir(dir));
    for (const DirEntry& file : names) {
      const std::string& fname = file.name;
      if (fs::path(fname).extension() == ".tmp") {
        (void)env_->RemoveFile((fs::path(dir) / fname).string());  // a snapshot write cut short
        continue;
      }
      const size_t tilde = fname.rfind('~');
      const size_t dot = fname.rfind('.');
      uint64_t incarnation = 0;
      if (tilde == std::string::npos || dot == std::string::npos || dot < tilde ||
          !absl::SimpleAtoi(fname.substr(tilde + 1, dot - tilde - 1), &incarnation)) {
        continue;
      }
      Found& found = files[{tenant, fname.substr(0, tilde)}][incarnation];
      found.incarnation = incarnation;
      if (fname.substr(dot) == ".snap") found.snap = true;
      if (fname.substr(dot) == ".failed") found.failed = true;
    }
  }
  for (auto& [names, by_incarnation] : files) {
    // These files predate incarnations of their own: each names its store's create LSN, so
    // the highest is the newest store; older ones are left-overs of a deleted store.
    const Found found = by_incarnation.rbegin()->second;
    State state;
    state.tenant = names.first;
    state.name = names.second;
    state.incarnation = found.incarnation;
    state.create_lsn = found.incarnation;
    state.last_lsn = found.incarnation;
    for (const auto& [incarnation, old] : by_incarnation) {
      if (incarnation == found.incarnation) continue;
      State stale = state;
      stale.incarnation = incarnation;
      (void)env_->RemoveFile(PathOf(stale, ".snap"));
      (void)env_->RemoveFile(PathOf(stale, ".failed"));
    }
    if (found.snap) {
      const std::string path = PathOf(state, ".snap");
      Restore(&state, absl::StrCat("snapshot ", path), env_->ReadFile(path));
    }
    if (found.failed) {
      auto reason = env_->ReadFile(PathOf(state, ".failed"));
      Fail(&state, reason.ok() ? *reason : "marked failed by an earlier recovery");
    }
    // The state database holds a later state of this store (a checkpoint after an earlier
    // start that could not finish moving these files): it wins.
    const std::string key = StoreKey(state.tenant, state.name);
    auto stored = states_.find(key);
    if (stored != states_.end() &&
        std::make_pair(stored->second.create_lsn, stored->second.last_lsn) >=
            std::make_pair(state.create_lsn, state.last_lsn)) {
      continue;
    }
    state.dirty_since = state.last_lsn + 1;  // to be written to the state database
    max_lsn_ = std::max(max_lsn_, state.last_lsn);
    states_[key] = std::move(state);
  }
  return true;
}

void Recovery::ApplyWrite(State* state, uint64_t lsn, const adapt::v1::WalWrite& write) {
  const absl::Status status = ReplayWrite(*state->store, write);
  if (!status.ok()) {
    // Replay rebuilds the state the record met when it was logged, so the commit failed then
    // too, and the caller got the error: the record is one that was never applied.
    std::fprintf(stderr,
                 "adaptd: store %s/%s: log record LSN %llu is skipped, as when it was "
                 "logged: %s\n",
                 state->tenant.c_str(), state->name.c_str(), static_cast<unsigned long long>(lsn),
                 std::string(status.message()).c_str());
    return;
  }
  state->ids.insert(state->ids.end(), write.ids().begin(), write.ids().end());
}

void Recovery::Apply(const LogFrame& frame) {
  const uint64_t lsn = frame.lsn;
  max_lsn_ = std::max(max_lsn_, lsn);
  const size_t slash = frame.key.find('/');
  if (slash == std::string::npos) return;
  auto it = states_.find(frame.key);
  adapt::v1::WalRecord record;
  if (!frame.payload_ok ||
      !record.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()))) {
    const std::string reason =
        absl::StrCat("log record LSN ", lsn, " is corrupt (",
                     frame.payload_ok ? "does not parse" : "checksum mismatch", ")");
    if (it == states_.end()) {
      State state;
      state.tenant = frame.key.substr(0, slash);
      state.name = frame.key.substr(slash + 1);
      state.incarnation = lsn;  // unless a later record of the store names its own
      state.incarnation_unknown = true;
      state.create_lsn = lsn;
      state.last_lsn = lsn;
      Fail(&state, reason);
      states_[frame.key] = std::move(state);
    } else if (lsn > it->second.last_lsn) {
      Fail(&it->second, reason);
      it->second.last_lsn = lsn;
    }
    return;
  }
  if (record.has_import_stored()) {
    // The import's state is in the state database when it was acknowledged; a stored state
    // at or after this record (`it`, from the catalog) covers it.
    if (it != states_.end() && it->second.last_lsn >= lsn) return;
    std::fprintf(stderr,
                 "adaptd: store %s: the import logged at LSN %llu never stored its state (it was "
                 "not acknowledged); dropped\n",
                 frame.key.c_str(), static_cast<unsigned long long>(lsn));
    return;
  }
  if (record.has_create() || record.has_import()) {
    if (it != states_.end() && it->second.last_lsn >= lsn) return;
    State state;
    state.tenant = frame.key.substr(0, slash);
    state.name = frame.key.substr(slash + 1);
    // A create record written before incarnations were ids names none: its LSN is the store's.
    state.incarnation = record.incarnation() != 0 ? record.incarnation() : lsn;
    state.create_lsn = lsn;
    state.last_lsn = lsn;
    state.dirty_since = lsn;
    // Pinning is the journal's, not the store's: the store is made without it.
    adapt::v1::StoreSpec spec = record.has_create() ? record.create() : record.import().spec();
    state.pinned = spec.pinned();
    spec.clear_pinned();
    auto store =
        record.has_create() ? CreateStore(spec, backend_) : RestoreStore(record.import(), backend_);
    state.spec = spec;
    if (store.ok()) {
      state.store = *std::move(store);
      state.spec = state.store->spec();
    } else {
      Fail(&state, absl::StrCat("replaying log record LSN ", lsn, ": ", store.status().message()));
    }
    states_[frame.key] = std::move(state);
    return;
  }
  if (it != states_.end() && it->second.incarnation_unknown && it->second.last_lsn < lsn) {
    it->second.incarnation = record.incarnation();
    it->second.incarnation_unknown = false;
  }
  if (it == states_.end() || it->second.incarnation != record.incarnation() ||
      it->second.last_lsn >= lsn) {
    return;  // covered by the snapshot, or a record of a deleted store
  }
  State& state = it->second;
  if (state.cold && !record.has_delete_()) {  // the record applies after the stored state
    state.cold = false;
    Restore(&state, absl::StrCat("the stored state of ", frame.key),
            db_->ReadState(frame.key, CatalogOf(state)));
  }
  state.last_lsn = lsn;
  if (state.dirty_since == 0) state.dirty_since = lsn;
  if (record.has_delete_()) {
    deletes_.push_back({frame.key, state.create_lsn, lsn});
    states_.erase(it);
    return;
  }
  if (!state.failure.empty()) return;
  if (record.has_write()) {
    ApplyWrite(&state, lsn, record.write());
  } else if (record.has_pin()) {
    state.pinned = record.pin().pinned();
  } else if (ReplayCompile(*state.store, record)) {
    if (!state.compiled) compiled_.push_back(frame.key);
    state.compiled = true;
  }
}

void Recovery::SolveCompiles() {
  // Only the stores whose log held a compile: a start-up with 10^5 stores and none visits none.
  for (const std::string& key : compiled_) {
    auto it = states_.find(key);
    if (it == states_.end()) continue;  // deleted later in the log
    State& state = it->second;
    if (!state.compiled || state.store == nullptr || !state.failure.empty()) continue;
    state.compiled = false;  // a key listed twice (deleted and made again) solves once
    if (const absl::Status solved = FinishReplay(*state.store); !solved.ok()) {
      std::fprintf(stderr, "adaptd: store %s: solving its last logged compile: %s\n", key.c_str(),
                   std::string(solved.message()).c_str());
    }
  }
}

absl::Status Recovery::ReplayLog(bool* had_segments) {
  const std::string dir = (fs::path(options_.data_dir) / "wal").string();
  if (absl::Status made = env_->CreateDirs(dir); !made.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("data_dir: ", made.message()));
  }
  ASSIGN_OR_RETURN(const auto segments, ListSegments(env_, dir));
  *had_segments = !segments.empty();
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [first, path] = segments[i];
    ASSIGN_OR_RETURN(std::string data, env_->ReadFile(path));
    const ParsedSegment parsed = ParseSegment(data);
    uint64_t previous = first - 1;
    size_t next_frame = 0;
    for (const LogDamage& damage : parsed.damage) {
      while (next_frame < parsed.frames.size() &&
             parsed.frames[next_frame].offset < damage.offset) {
        previous = parsed.frames[next_frame++].lsn;
      }
      const uint64_t after =
          next_frame < parsed.frames.size() ? parsed.frames[next_frame].lsn : previous + 1;
      damage_.emplace_back(previous + 1, after);
    }
    for (const LogFrame& frame : parsed.frames) Apply(frame);
    if (parsed.torn_tail) {
      const bool last = i + 1 == segments.size();
      std::fprintf(stderr, "adaptd: log segment %s: %llu bytes at the end hold no whole record%s\n",
                   path.c_str(), static_cast<unsigned long long>(data.size() - parsed.valid_bytes),
                   last ? "; dropped (a write cut short)" : " (damage)");
      if (last) {
        RETURN_IF_ERROR(env_->TruncateFile(path, parsed.valid_bytes));
      } else {
        const uint64_t last_lsn = parsed.frames.empty() ? first - 1 : parsed.frames.back().lsn;
        damage_.emplace_back(last_lsn + 1, segments[i + 1].first);
      }
    }
  }
  return absl::OkStatus();
}

void Recovery::MarkDamage() {
  for (const auto& [from, to] : damage_) {
    std::fprintf(stderr, "adaptd: the log is damaged between LSN %llu and %llu\n",
                 static_cast<unsigned long long>(from), static_cast<unsigned long long>(to));
    for (auto& [key, state] : states_) {
      // A store is unaffected only if it was created after the damage or a snapshot covers it.
      if (state.create_lsn > to || state.last_lsn >= to) continue;
      Fail(&state, absl::StrCat("the log is damaged between LSN ", from, " and ", to,
                                ": a record of this store may be lost"));
    }
  }
}

void Recovery::Finish(Journal* journal, std::vector<RecoveredStore>* recovered) {
  // Failures go into the catalog in one commit, so the stores stay failed once the log that
  // explains them is truncated; if that commit fails, their log is kept instead.
  absl::Status marked = absl::OkStatus();
  if (auto writer = db_->BeginWrite(); !writer.ok()) {
    marked = writer.status();
  } else {
    for (auto& [key, state] : states_) {
      if (state.failure.empty()) continue;
      // A cold store failed by damage in the log: its spec, for the FailedStore, is in its
      // stored entry.
      if (state.store == nullptr && state.cold && !state.record.empty()) {
        state.spec = CatalogOf(state).spec();
      }
      if (state.marked || !marked.ok()) continue;
      adapt::v1::CatalogEntry entry;
      *entry.mutable_spec() = state.store != nullptr ? state.store->spec() : state.spec;
      entry.set_incarnation(state.incarnation);
      entry.set_create_lsn(state.create_lsn);
      entry.set_lsn(state.last_lsn);
      entry.set_failure(state.failure);
      marked = writer->PutCatalog(key, entry);
    }
    if (marked.ok()) marked = writer->Commit();
  }
  if (!marked.ok()) {
    std::fprintf(stderr, "adaptd: recording failed stores: %s (their log is kept)\n",
                 std::string(marked.message()).c_str());
  }
  // Each cold store's description goes to its slot as the bytes it was stored as, and the
  // rest of its stored entry to the journal's entry, both parsed when needed (catalog_row.h).
  recovered->reserve(recovered->size() + states_.size());
  for (auto& [key, state] : states_) {
    const bool cold = state.cold && state.failure.empty();
    std::string info, catalog;
    if (!state.record.empty()) {
      if (const std::optional<CatalogRow> row = ReadCatalogRow(state.record); row.has_value()) {
        if (cold) info = std::string(row->info);
        catalog = CatalogRecordWithoutInfo(state.record, *row);
      } else {
        // An entry not in the server's usual form (say, without a description).
        adapt::v1::CatalogEntry stored = CatalogOf(state);
        if (cold) {
          adapt::v1::StoreInfo description = stored.info();
          *description.mutable_spec() = stored.spec();
          info = description.SerializeAsString();
        }
        stored.clear_info();
        catalog = stored.SerializeAsString();
      }
      std::string().swap(state.record);
    }
    auto entry = std::make_shared<Journal::Entry>(options_.max_ids_per_store);
    entry->tenant = state.tenant;
    entry->name = state.name;
    entry->incarnation = state.incarnation;
    uint64_t dirty_since = state.dirty_since;
    if (!state.failure.empty()) {
      std::fprintf(stderr, "adaptd: store %s failed to recover: %s\n", key.c_str(),
                   state.failure.c_str());
      dirty_since = state.marked || marked.ok() ? 0 : state.create_lsn;
      if (state.store != nullptr) state.spec = state.store->spec();
      state.store = std::make_shared<FailedStore>(state.spec, state.failure);
    }
    entry->store = cold ? nullptr : state.store;
    if (dirty_since != 0) left_in_log_ = true;
    {
      absl::MutexLock entry_lock(&entry->mu);
      entry->catalog = std::move(catalog);
      entry->create_lsn = state.create_lsn;
      entry->last_lsn = state.last_lsn;
      entry->dirty_since = dirty_since;
      entry->pinned = state.pinned;
      for (const auto& id : state.ids) entry->ids.Add(id);
    }
    {
      absl::MutexLock lock(&journal->mu_);
      journal->entries_.insert_or_assign(journal->entries_.end(), key, entry);  // in key order
    }
    RecoveredStore& r = recovered->emplace_back();
    r.tenant = std::move(state.tenant);
    r.name = std::move(state.name);
    r.store = entry->store;
    r.kind = r.store != nullptr ? r.store->spec().kind() : state.kind;
    r.base = r.store != nullptr ? r.store->spec().base() : state.base;
    r.info = std::move(info);
    r.pinned = state.pinned;
    r.incarnation = state.incarnation;
  }
  if (!deletes_.empty()) left_in_log_ = true;
  absl::MutexLock lock(&journal->mu_);
  journal->pending_deletes_ = std::move(deletes_);
}

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(const JournalOptions& options,
                                                       kernels::Backend* backend,
                                                       std::vector<RecoveredStore>* recovered) {
  std::unique_ptr<Journal> journal(new Journal(options, backend));
  StateDbOptions db_options;
  db_options.dir = (fs::path(options.data_dir) / "state").string();
  db_options.map_bytes = options.state_map_bytes;
  db_options.sync = options.sync;
  ASSIGN_OR_RETURN(journal->state_db_, StateDb::Open(db_options));
  Recovery recovery(journal->options_, journal->env_, backend, journal->state_db_.get());
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(recovery.LoadCatalog());
  const absl::Time catalog_read = absl::Now();
  ASSIGN_OR_RETURN(const bool legacy, recovery.LoadLegacySnapshots());
  bool had_segments = false;
  RETURN_IF_ERROR(recovery.ReplayLog(&had_segments));
  recovery.MarkDamage();
  recovery.SolveCompiles();
  const absl::Time replayed = absl::Now();
  WalOptions wal_options;
  wal_options.dir = (fs::path(options.data_dir) / "wal").string();
  wal_options.sync = options.sync;
  wal_options.on_sync = options.on_sync;
  wal_options.env = journal->env_;
  ASSIGN_OR_RETURN(journal->wal_, Wal::Open(std::move(wal_options), recovery.max_lsn() + 1));
  recovery.Finish(journal.get(), recovered);
  const absl::Time finished = absl::Now();
  // What was replayed (or read from snapshot files) goes into the state database now, so the
  // next start replays only new records. A failure here leaves the log (and the files) for
  // the next checkpoint: the server starts anyway.
  if (had_segments && !legacy && !recovery.left_in_log()) {
    // Every record in the log is in the state database already: the old segments go, as a
    // checkpoint would remove them, without its pass over every store.
    absl::Status removed = journal->wal_->RemoveSegmentsBefore(journal->wal_->next_lsn());
    if (!removed.ok()) {
      std::fprintf(stderr, "adaptd: removing the log segments a checkpoint covers: %s\n",
                   std::string(removed.message()).c_str());
    }
  } else if (had_segments || legacy) {
    absl::Status checkpoint = journal->Checkpoint();
    if (!checkpoint.ok()) {
      std::fprintf(stderr, "adaptd: the start-up checkpoint failed: %s\n",
                   std::string(checkpoint.message()).c_str());
    } else if (legacy) {
      std::error_code ec;
      fs::remove_all(fs::path(options.data_dir) / "snapshots", ec);
    }
  }
  const absl::Time checkpointed = absl::Now();
  journal->recovery_report_ = absl::StrFormat(
      "%zu stores in %.3f s (catalog %.3f s, log %.3f s, entries %.3f s, checkpoint %.3f s)",
      recovered->size(), absl::ToDoubleSeconds(checkpointed - start),
      absl::ToDoubleSeconds(catalog_read - start), absl::ToDoubleSeconds(replayed - catalog_read),
      absl::ToDoubleSeconds(finished - replayed), absl::ToDoubleSeconds(checkpointed - finished));
  journal->checkpointer_ = std::thread([j = journal.get()] { j->CheckpointLoop(); });
  return journal;
}

}  // namespace adaptd
