// The file-per-store engine of state_engines.h: what adaptd does today. Each store is one file
// snapshots/<tenant>/<store>.snap, written like WriteFileAtomically with sync (write a .tmp,
// fsync it, rename it over the old file, fsync the directory), so every write is durable on
// its own and Commit has nothing left to do. The file starts with the catalog record (a 4-byte
// length, then the record), so the catalog scan reads one small block per file; adaptd today
// reads every snapshot whole at start-up, so this is the file layout's best case.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "bench/state_engine_util.h"
#include "bench/state_engines.h"
#include "server/base/status_macros.h"

namespace adaptd::bench {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::InternalError(Cat("files: ", what, " ", path, ": ", std::strerror(errno)));
}

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class FileEngine final : public StateEngine {
 public:
  explicit FileEngine(const EngineConfig& config)
      : root_((std::filesystem::path(config.dir) / "snapshots").string()) {}

  std::string Name() const override { return "files"; }

  std::string Settings() const override {
    return "one file per store: write .tmp, fsync, rename, fsync the directory (as "
           "WriteFileAtomically); catalog record as a file header";
  }

  absl::Status Open() override {
    std::error_code ec;
    std::filesystem::create_directories(root_, ec);
    if (ec) return absl::InternalError(Cat("files: mkdir ", root_, ": ", ec.message()));
    return absl::OkStatus();
  }
  void Close() override { made_dirs_.clear(); }

  absl::Status WriteStore(std::string_view tenant, std::string_view store, std::string_view catalog,
                          std::string_view value) override {
    const std::string path = PathOf(tenant, store);
    const std::string dir = std::filesystem::path(path).parent_path().string();
    if (made_dirs_.insert(dir).second) std::filesystem::create_directories(dir);
    const std::string tmp = path + ".tmp";
    {
      Fd file(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (file.fd < 0) return Errno("open", tmp);
      const uint32_t length = static_cast<uint32_t>(catalog.size());
      iovec parts[3] = {{const_cast<uint32_t*>(&length), sizeof(length)},
                        {const_cast<char*>(catalog.data()), catalog.size()},
                        {const_cast<char*>(value.data()), value.size()}};
      const size_t total = sizeof(length) + catalog.size() + value.size();
      size_t done = 0;
      while (done < total) {  // writev may write less; finish with plain writes
        const ssize_t n = done == 0 ? ::writev(file.fd, parts, 3)
                                    : ::pwrite(file.fd, Flat(parts, done), Left(parts, done), done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Errno("write", tmp);
        done += static_cast<size_t>(n);
      }
      if (::fsync(file.fd) != 0) return Errno("fsync", tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename", tmp);
    Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (d.fd < 0 || ::fsync(d.fd) != 0) return Errno("fsync dir", dir);
    return absl::OkStatus();
  }

  absl::Status Commit() override { return absl::OkStatus(); }

  absl::Status ReadValue(std::string_view tenant, std::string_view store,
                         std::string* value) override {
    const std::string path = PathOf(tenant, store);
    Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0) return Errno("open", path);
    value->resize(static_cast<size_t>(st.st_size));
    RETURN_IF_ERROR(ReadAt(file.fd, value->data(), value->size(), 0, path));
    uint32_t length = 0;
    if (value->size() < sizeof(length)) return absl::DataLossError("files: short " + path);
    std::memcpy(&length, value->data(), sizeof(length));
    if (value->size() < sizeof(length) + length) return absl::DataLossError("files: bad " + path);
    value->erase(0, sizeof(length) + length);
    return absl::OkStatus();
  }

  absl::Status ScanCatalog(
      const std::function<void(std::string_view, std::string_view)>& visit) override {
    char header[4096];
    for (const auto& tenant : std::filesystem::directory_iterator(root_)) {
      if (!tenant.is_directory()) continue;
      const std::string dir = tenant.path().string();
      DIR* listing = ::opendir(dir.c_str());
      if (listing == nullptr) return Errno("opendir", dir);
      const std::string tenant_name = tenant.path().filename().string();
      absl::Status status;
      while (dirent* entry = ::readdir(listing)) {
        const std::string_view name = entry->d_name;
        if (entry->d_type != DT_REG || !name.ends_with(".snap")) continue;  // .tmp, big/
        const std::string path = Cat(dir, "/", name);
        Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        const ssize_t n = file.fd < 0 ? -1 : ::pread(file.fd, header, sizeof(header), 0);
        uint32_t length = 0;
        if (n >= 4) std::memcpy(&length, header, sizeof(length));
        if (n < 4 || length + 4 > static_cast<size_t>(n)) {
          status = n < 0 ? Errno("read", path) : absl::DataLossError("files: bad header " + path);
          break;
        }
        const std::string key = Cat(tenant_name, "/", name.substr(0, name.size() - 5));
        visit(key, std::string_view(header + 4, length));
      }
      ::closedir(listing);
      RETURN_IF_ERROR(status);
    }
    return absl::OkStatus();
  }

 private:
  std::string PathOf(std::string_view tenant, std::string_view store) const {
    return Cat(root_, "/", tenant, "/", store, ".snap");
  }

  static absl::Status ReadAt(int fd, char* out, size_t size, off_t offset,
                             const std::string& path) {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd, out + done, size - done, offset + done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Errno("read", path);
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  // After a short writev: the address of byte `done` of the three parts, and what is left of
  // that part. The caller loops, so writing one part at a time is enough.
  static const char* Flat(const iovec* parts, size_t done) {
    for (int i = 0; i < 3; ++i) {
      if (done < parts[i].iov_len) return static_cast<const char*>(parts[i].iov_base) + done;
      done -= parts[i].iov_len;
    }
    return nullptr;
  }
  static size_t Left(const iovec* parts, size_t done) {
    for (int i = 0; i < 3; ++i) {
      if (done < parts[i].iov_len) return parts[i].iov_len - done;
      done -= parts[i].iov_len;
    }
    return 0;
  }

  std::string root_;
  std::set<std::string> made_dirs_;
};

}  // namespace

std::unique_ptr<StateEngine> MakeFileEngine(const EngineConfig& config) {
  return std::make_unique<FileEngine>(config);
}

}  // namespace adaptd::bench
