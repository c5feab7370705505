#include "server/persistence/wal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "server/persistence/file_util.h"
#include "server/persistence/log_format.h"

namespace adaptd {
namespace {

std::string SegmentName(uint64_t first_lsn) {
  char name[64];
  std::snprintf(name, sizeof(name), "wal-%020llu.log", static_cast<unsigned long long>(first_lsn));
  return name;
}

}  // namespace

std::vector<std::pair<uint64_t, std::string>> ListSegments(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 28 || name.rfind("wal-", 0) != 0 || name.substr(24) != ".log") continue;
    uint64_t first = 0;
    bool digits = true;
    for (size_t i = 4; i < 24; ++i) {
      if (name[i] < '0' || name[i] > '9') digits = false;
      first = first * 10 + static_cast<uint64_t>(name[i] - '0');
    }
    if (digits) out.emplace_back(first, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(WalOptions options, uint64_t next_lsn) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("log directory ", options.dir, ": cannot be created: ", ec.message()));
  }
  std::unique_ptr<Wal> wal(new Wal(std::move(options)));
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
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open log segment ", path, ": ", std::strerror(errno)));
  }
  if (options_.sync) {
    absl::Status status = SyncDirectory(options_.dir);
    if (!status.ok()) {
      ::close(fd);
      return status;
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  fd_path_ = path;
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
    const int fd = fd_;
    const std::string path = fd_path_;
    writing_ = true;
    absl::Status status = error_;
    mu_.Unlock();
    if (status.ok()) status = WriteAll(fd, batch, path);
    if (status.ok() && options_.sync) {
      const auto start = std::chrono::steady_clock::now();
      if (::fdatasync(fd) != 0) {
        status = absl::UnavailableError(
            absl::StrCat("cannot sync log segment ", path, ": ", std::strerror(errno)));
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (options_.on_sync) options_.on_sync(took.count());
    }
    mu_.Lock();
    writing_ = false;
    if (status.ok()) {
      durable_lsn_ = last;
      ++syncs_;
    } else if (error_.ok()) {
      error_ = absl::UnavailableError(
          absl::StrCat("the write-ahead log failed: ", status.message()));
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
    current = fd_path_;
  }
  const auto segments = ListSegments(options_.dir);
  bool removed = false;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    if (segments[i + 1].first > lsn || segments[i].second == current) continue;
    std::error_code ec;
    std::filesystem::remove(segments[i].second, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot remove log segment ", segments[i].second, ": ", ec.message()));
    }
    removed = true;
  }
  if (removed && options_.sync) return SyncDirectory(options_.dir);
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
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  durable_cv_.SignalAll();
}

}  // namespace adaptd
