#include "server/persistence/testing/fault_injection_env.h"

#include <fnmatch.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

bool Matches(const std::string& glob, const std::string& path) {
  return ::fnmatch(glob.c_str(), path.c_str(), 0) == 0;
}

// The same words the POSIX Env uses, so tests see what a real failure would say.
absl::Status Injected(const std::string& what, const std::string& path, int error) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, " failed: ", std::strerror(error)));
}

}  // namespace

class FaultInjectionEnv::File final : public WritableFile {
 public:
  File(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base, uint64_t size)
      : env_(env), base_(std::move(base)), size_(size), synced_size_(size) {}

  absl::Status Append(std::string_view data) override {
    if (const auto fault = env_->Take(What::kAppendNoSpace, path())) {
      return Injected("write to", path(), ENOSPC);
    }
    if (const auto fault = env_->Take(What::kAppendShort, path())) {
      const std::string_view half = data.substr(0, data.size() / 2);
      if (absl::Status written = base_->Append(half); !written.ok()) return written;
      size_ += half.size();
      return Injected("write to", path(), ENOSPC);
    }
    absl::Status written = base_->Append(data);
    if (written.ok()) size_ += data.size();
    return written;
  }

  absl::Status Sync() override {
    env_->MaybeHoldSync(path());
    if (const auto fault = env_->Take(What::kSyncEio, path())) {
      if (fault->drop_unsynced) {
        // What the page cache held is gone; the file keeps what the last good sync wrote.
        (void)env_->base_->TruncateFile(path(), synced_size_);
        size_ = synced_size_;
      }
      return Injected("fsync of", path(), EIO);
    }
    absl::Status synced = base_->Sync();
    if (synced.ok()) synced_size_ = size_;
    return synced;
  }

  absl::Status Close() override { return base_->Close(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* const env_;
  const std::unique_ptr<WritableFile> base_;
  uint64_t size_, synced_size_;
};

void FaultInjectionEnv::Inject(Fault fault) {
  absl::MutexLock lock(&mu_);
  armed_.push_back({std::move(fault)});
}

void FaultInjectionEnv::ClearFaults() {
  absl::MutexLock lock(&mu_);
  armed_.clear();
}

int FaultInjectionEnv::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

std::optional<FaultInjectionEnv::Fault> FaultInjectionEnv::Take(What what, const std::string& path,
                                                                const std::string& other_path) {
  absl::MutexLock lock(&mu_);
  for (Armed& armed : armed_) {
    const Fault& f = armed.fault;
    if (f.what != what) continue;
    if (!Matches(f.path_glob, path) && (other_path.empty() || !Matches(f.path_glob, other_path))) {
      continue;
    }
    ++armed.seen;
    if (armed.seen < f.nth || (f.times >= 0 && armed.failed >= f.times)) continue;
    ++armed.failed;
    ++failures_;
    return f;
  }
  return std::nullopt;
}

void FaultInjectionEnv::BlockSyncs(std::string glob) {
  absl::MutexLock lock(&mu_);
  block_glob_ = std::move(glob);
}

void FaultInjectionEnv::ReleaseSyncs() {
  absl::MutexLock lock(&mu_);
  block_glob_.clear();
}

bool FaultInjectionEnv::WaitForBlockedSync(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const auto held = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return blocked_ > 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&held), timeout);
}

void FaultInjectionEnv::MaybeHoldSync(const std::string& path) {
  absl::MutexLock lock(&mu_);
  if (block_glob_.empty() || !Matches(block_glob_, path)) return;
  ++blocked_;
  const auto released = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return block_glob_.empty(); };
  mu_.Await(absl::Condition(&released));
  --blocked_;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path, bool truncate) {
  auto base = base_->NewWritableFile(path, truncate);
  if (!base.ok()) return base.status();
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  return std::make_unique<File>(this, *std::move(base), ec ? 0 : size);
}

absl::Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  if (Take(What::kRenameEio, from, to)) {
    return Injected(absl::StrCat("rename of ", from, " onto"), to, EIO);
  }
  return base_->RenameFile(from, to);
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  if (Take(What::kSyncDirEio, dir)) return Injected("fsync of directory", dir, EIO);
  return base_->SyncDir(dir);
}

}  // namespace adaptd
