#include "server/persistence/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

absl::Status Errno(const std::string& what, const std::string& path, int error) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, " failed: ", std::strerror(error)));
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("write to", path_, errno);
      data.remove_prefix(static_cast<size_t>(n));  // a short write: the rest goes next
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return Errno("fsync of", path_, errno);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return Errno("close of", path_, errno);
    return absl::OkStatus();
  }

  const std::string& path() const override { return path_; }

 private:
  int fd_;
  const std::string path_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                bool truncate) override {
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0);
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return Errno("open of", path, errno);
    return std::make_unique<PosixWritableFile>(fd, path);
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("open of", path, errno);
    std::string data;
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        ::close(fd);
        return Errno("read of", path, error);
      }
      if (n == 0) break;
      data.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return data;
  }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Errno(absl::StrCat("rename of ", from, " onto"), to, errno);
    }
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("removal of", path, errno);
    return absl::OkStatus();
  }

  absl::Status TruncateFile(const std::string& path, uint64_t size) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Errno("open of", path, errno);
    absl::Status status = absl::OkStatus();
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      status = Errno("truncation of", path, errno);
    }
    if (status.ok() && ::fsync(fd) != 0) status = Errno("fsync of", path, errno);
    ::close(fd);
    return status;
  }

  absl::Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("creation of directory ", dir, " failed: ", ec.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Errno("listing of directory", dir, errno);
    std::vector<DirEntry> out;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {  // some file systems do not fill d_type
        struct stat st;
        is_dir = ::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      out.push_back({name, is_dir});
    }
    ::closedir(d);
    return out;
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open of directory", dir, errno);
    const int rc = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (rc != 0) return Errno("fsync of directory", dir, error);
    return absl::OkStatus();
  }

  int64_t MonotonicNanos() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Env* Env::Default() {
  static Env* const env = new PosixEnv();  // never destroyed: threads may use it at exit
  return env;
}

}  // namespace adaptd
