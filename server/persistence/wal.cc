#include "server/persistence/wal.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/persistence/log_format.h"

namespace adaptd {
namespace {

std::string SegmentName(uint64_t first_lsn) {
  char name[64];
  std::snprintf(name, sizeof(name), "wal-%020llu.log", static_cast<unsigned long long>(first_lsn));
  return name;
}

}  // namespace

absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> ListSegments(Env* env,
                                                                           const std::string& dir) {
  auto entries = env->ListDir(dir);
  if (!entries.ok()) return entries.status();
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const DirEntry& entry : *entries) {
    const std::string& name = entry.name;
    if (name.size() != 28 || name.rfind("wal-", 0) != 0 || name.substr(24) != ".log") continue;
    uint64_t first = 0;
    bool digits = true;
    for (size_t i = 4; i < 24; ++i) {
      if (name[i] < '0' || name[i] > '9') digits = false;
      first = first * 10 + static_cast<uint64_t>(name[i] - '0');
    }
    if (digits) out.emplace_back(first, (std::filesystem::path(dir) / name).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(WalOptions options, uint64_t next_lsn) {
  std::unique_ptr<Wal> wal(new Wal(std::move(options)));
  if (absl::Status made = wal->env_->CreateDirs(wal->options_.dir); !made.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("write-ahead log: ", made.message()));
  }
  {
    absl::MutexLock lock(&wal->mu_);
    wal->next_lsn_ = std::max<uint64_t>(1, next_lsn);
    wal->durable_lsn_ = wal->next_lsn_ - 1;
    absl::Status status = wal->OpenSegment(wal->next_lsn_);
    if (!status.ok()) return status;
  }
  wal->writer_ = std::thread([w = wal.get()] { w->WriterLoop(); });
  return wal;
}

Wal::~Wal() { Close(); }

absl::Status Wal::OpenSegment(uint64_t first_lsn) {
  const std::string path = (std::filesystem::path(options_.dir) / SegmentName(first_lsn)).string();
  auto file = env_->NewWritableFile(path, /*truncate=*/false);
  if (!file.ok()) {
    return absl::UnavailableError(absl::StrCat("write-ahead log: ", file.status().message()));
  }
  if (options_.sync) {
    if (absl::Status synced = env_->SyncDir(options_.dir); !synced.ok()) {
      // The old segment stays current; an empty new one must not survive to mislead
      // RemoveSegmentsBefore about where the old one ends.
      (void)(*file)->Close();
      (void)env_->RemoveFile(path);
      return absl::UnavailableError(absl::StrCat("write-ahead log: ", synced.message()));
    }
  }
  if (file_ != nullptr) (void)file_->Close();  // everything in it is synced already
  file_ = *std::move(file);
  segment_bytes_ = 0;
  return absl::OkStatus();
}

uint64_t Wal::Append(std::string_view key, std::string_view payload) {
  absl::MutexLock lock(&mu_);
  while (rotating_) durable_cv_.Wait(&mu_);
  const uint64_t lsn = next_lsn_++;
  const size_t before = pending_.size();
  AppendFrame(lsn, key, payload, &pending_);
  segment_bytes_ += pending_.size() - before;
  ++records_;
  work_cv_.Signal();
  return lsn;
}

absl::Status Wal::WaitDurable(uint64_t lsn) {
  absl::MutexLock lock(&mu_);
  while (durable_lsn_ < lsn && error_.ok()) {
    if (stop_ && pending_.empty() && !writing_) break;
    durable_cv_.Wait(&mu_);
  }
  if (durable_lsn_ >= lsn) return absl::OkStatus();
  if (!error_.ok()) return error_;
  return absl::UnavailableError("the write-ahead log is closed");
}

uint64_t Wal::next_lsn() const {
  absl::MutexLock lock(&mu_);
  return next_lsn_;
}

void Wal::WriterLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (pending_.empty() && !stop_) work_cv_.Wait(&mu_);
    if (pending_.empty() && stop_) break;
    std::string batch;
    batch.swap(pending_);
    const uint64_t last = next_lsn_ - 1;
    WritableFile* file = file_.get();
    writing_ = true;
    absl::Status status = error_;
    mu_.Unlock();
    if (status.ok()) status = file->Append(batch);
    if (status.ok() && options_.sync) {
      const int64_t start = env_->MonotonicNanos();
      status = file->Sync();
      if (options_.on_sync) {
        options_.on_sync(1e-9 * static_cast<double>(env_->MonotonicNanos() - start));
      }
    }
    mu_.Lock();
    writing_ = false;
    if (status.ok()) {
      durable_lsn_ = last;
      ++syncs_;
    } else if (error_.ok()) {
      error_ = absl::UnavailableError(absl::StrCat("write-ahead log: ", status.message()));
      std::fprintf(stderr,
                   "adaptd: %s; LSN %llu and later are not durable and were not applied; no "
                   "write is accepted until the server restarts (reads go on)\n",
                   std::string(error_.message()).c_str(),
                   static_cast<unsigned long long>(durable_lsn_ + 1));
    }
    durable_cv_.SignalAll();
  }
  durable_cv_.SignalAll();
}

absl::StatusOr<uint64_t> Wal::Rotate() {
  absl::MutexLock lock(&mu_);
  while (rotating_) durable_cv_.Wait(&mu_);
  rotating_ = true;
  while ((writing_ || !pending_.empty()) && error_.ok() && !stop_) durable_cv_.Wait(&mu_);
  absl::Status status = error_;
  if (status.ok() && stop_) status = absl::UnavailableError("the write-ahead log is closed");
  if (status.ok()) status = OpenSegment(next_lsn_);
  rotating_ = false;
  durable_cv_.SignalAll();
  if (!status.ok()) return status;
  return next_lsn_;
}

absl::Status Wal::RemoveSegmentsBefore(uint64_t lsn) {
  std::string current;
  {
    absl::MutexLock lock(&mu_);
    if (file_ != nullptr) current = file_->path();
  }
  auto segments = ListSegments(env_, options_.dir);
  if (!segments.ok()) return segments.status();
  bool removed = false;
  for (size_t i = 0; i + 1 < segments->size(); ++i) {
    if ((*segments)[i + 1].first > lsn || (*segments)[i].second == current) continue;
    RETURN_IF_ERROR(env_->RemoveFile((*segments)[i].second));
    removed = true;
  }
  if (removed && options_.sync) return env_->SyncDir(options_.dir);
  return absl::OkStatus();
}

uint64_t Wal::segment_bytes() const {
  absl::MutexLock lock(&mu_);
  return segment_bytes_;
}

uint64_t Wal::syncs() const {
  absl::MutexLock lock(&mu_);
  return syncs_;
}

uint64_t Wal::records() const {
  absl::MutexLock lock(&mu_);
  return records_;
}

void Wal::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_ && !writer_.joinable()) return;
    stop_ = true;
    work_cv_.Signal();
  }
  if (writer_.joinable()) writer_.join();
  absl::MutexLock lock(&mu_);
  if (file_ != nullptr) (void)file_->Close();
  file_.reset();
  durable_cv_.SignalAll();
}

}  // namespace adaptd
