#include "client/adaptctl/migrate_source.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "server/persistence/state_db.h"
#include "server/stores/snapshot_file.h"

namespace adaptctl {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kStopWait = absl::Seconds(60);
constexpr size_t kLogTailBytes = 2000;

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("a loopback port: ", std::strerror(error)));
  return ntohs(address.sin_port);
}

// The process holding a lock that conflicts with a write lock on `path`; 0 when none (or no
// such file).
pid_t LockHolder(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool asked = fcntl(fd, F_GETLK, &probe) == 0;
  close(fd);
  return asked && probe.l_type != F_UNLCK ? probe.l_pid : 0;
}

}  // namespace

absl::Status CheckNotInUse(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  for (const char* lock : {"state/lock.mdb", "state/catalog/lock.mdb"}) {
    if (const pid_t holder = LockHolder(fs::path(dir) / lock); holder != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, " is in use by process ", holder, " (it holds ", lock,
                       "): stop that adaptd first; the migration reads a stopped server's "
                       "data directory"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::set<std::string>> ReadDrainedMembers(const std::string& dir) {
  std::set<std::string> drained;
  const fs::path path = fs::path(dir) / "cluster.state";
  std::ifstream in(path);
  if (!in) return drained;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() == 2 && words[0] == "draining") drained.insert(words[1]);
  }
  return drained;
}

absl::StatusOr<std::map<std::string, StoredStore>> ReadStoredStores(const std::string& dir) {
  adaptd::StateDbOptions options;
  options.dir = (fs::path(dir) / "state").string();
  absl::StatusOr<std::unique_ptr<adaptd::StateDb>> db = adaptd::StateDb::Open(options);
  if (!db.ok()) return db.status();
  std::map<std::string, StoredStore> stores;
  absl::Status scanned = (*db)->ScanCatalog([&](std::string_view key,
                                                adapt::v1::CatalogEntry entry) -> absl::Status {
    StoredStore& stored = stores[std::string(key)];
    if (!entry.failure().empty() || entry.state_bytes() == 0) return absl::OkStatus();
    absl::StatusOr<std::string> file = (*db)->ReadState(key, entry);
    if (!file.ok()) return file.status();
    absl::StatusOr<adaptd::DecodedSnapshot> decoded = adaptd::DecodeSnapshotState(*file);
    if (!decoded.ok()) {
      return absl::DataLossError(absl::StrCat(std::string(key), ": ", decoded.status().message()));
    }
    const auto& ids = decoded->header.durable().applied_ids();
    stored.applied_ids.assign(ids.begin(), ids.end());
    return absl::OkStatus();
  });
  if (!scanned.ok()) return scanned;
  return stores;
}

absl::StatusOr<std::unique_ptr<ScratchSource>> ScratchSource::Create(
    const std::string& source_dir, const std::string& scratch_dir, const std::string& adaptd,
    std::vector<std::string> extra_args) {
  if (absl::Status free = CheckNotInUse(source_dir); !free.ok()) return free;
  std::error_code error;
  if (fs::exists(scratch_dir, error)) {
    return absl::AlreadyExistsError(absl::StrCat("scratch directory ", scratch_dir, " exists"));
  }
  fs::create_directories(fs::path(scratch_dir).parent_path(), error);
  fs::copy(source_dir, scratch_dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks,
           error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("copying ", source_dir, " to ", scratch_dir, ": ", error.message()));
  }
  return std::unique_ptr<ScratchSource>(
      new ScratchSource(scratch_dir, adaptd, std::move(extra_args)));
}

ScratchSource::~ScratchSource() { (void)Stop(); }

std::string ScratchSource::LogTail() const {
  std::ifstream in(copy_dir_ + ".log", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() > kLogTailBytes ? all.substr(all.size() - kLogTailBytes) : all;
}

absl::Status ScratchSource::Start(absl::Duration wait) {
  absl::StatusOr<int> port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  address_ = absl::StrCat("127.0.0.1:", *port);
  std::vector<std::string> args = {adaptd_, "--listen",   address_, "--metrics-listen",
                                   "off",   "--data-dir", copy_dir_};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  const std::string log = copy_dir_ + ".log";
  // Everything the child needs is made before the fork: it may only call async-signal-safe
  // functions (gRPC's threads may hold the allocator's locks).
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = Connect();
  if (!client.ok()) return client.status();
  const absl::Time deadline = absl::Now() + wait;
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::FailedPreconditionError(absl::StrCat(
          adaptd_, " on ", copy_dir_, " exited (status ",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1, ") before serving: ", LogTail()));
    }
    absl::StatusOr<adaptd::ServingStatus> health = (*client)->Health();
    if (health.ok() && *health == adaptd::ServingStatus::kServing) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat(adaptd_, " on ", copy_dir_,
                                                  " did not serve within ",
                                                  absl::FormatDuration(wait), ": ", LogTail()));
}

absl::Status ScratchSource::Stop() {
  if (pid_ < 0) return absl::OkStatus();
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + kStopWait;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return absl::DeadlineExceededError(
          absl::StrCat("adaptd on ", copy_dir_, " did not stop within ",
                       absl::FormatDuration(kStopWait), ": ", LogTail()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  pid_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("adaptd on ", copy_dir_, " stopped with an error: ", LogTail()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<adaptd::Client>> ScratchSource::Connect() const {
  adaptd::ClientOptions options;
  options.address = address_;
  options.unary_timeout = absl::Seconds(30);
  return adaptd::Client::Connect(options);
}

}  // namespace adaptctl
