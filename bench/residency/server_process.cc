#include "bench/residency/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace adaptd::bench {
namespace {

std::string ExitDescription(int wstatus) {
  if (WIFEXITED(wstatus)) return absl::StrCat("exit code ", WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) return absl::StrCat("signal ", WTERMSIG(wstatus));
  return absl::StrCat("wait status ", wstatus);
}

}  // namespace

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::Status ServerProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                  const std::string& log_path) {
  if (pid_ > 0) return absl::FailedPreconditionError("adaptd is running already");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return absl::InternalError(absl::StrCat("--adaptd: cannot start ", binary, ": ", strerror(rc)));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> ServerProcess::Stop(int signal, double timeout_s) {
  if (pid_ <= 0) return absl::FailedPreconditionError("adaptd is not running");
  const absl::Time start = absl::Now();
  if (::kill(pid_, signal) != 0) {
    return absl::InternalError(absl::StrCat("kill(", pid_, "): ", strerror(errno)));
  }
  int wstatus = 0;
  while (true) {
    const pid_t r = ::waitpid(pid_, &wstatus, WNOHANG);
    if (r == pid_) break;
    if (r < 0) return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
    if (absl::Now() - start > absl::Seconds(timeout_s)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return absl::DeadlineExceededError(
          absl::StrCat("adaptd did not exit within ", timeout_s, " s of signal ", signal));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  pid_ = -1;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (signal != SIGKILL && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
    return absl::InternalError(
        absl::StrCat("adaptd stopped with ", ExitDescription(wstatus), " after signal ", signal));
  }
  return seconds;
}

absl::Status ServerProcess::CheckRunning() {
  if (pid_ <= 0) return absl::FailedPreconditionError("adaptd is not running");
  int wstatus = 0;
  if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
    pid_ = -1;
    return absl::FailedPreconditionError(
        absl::StrCat("adaptd exited (", ExitDescription(wstatus), "); see its log"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResidentSet> ResidentSetOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  ResidentSet set;
  bool found = false;
  for (std::string line; std::getline(status, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    int64_t* field = key == "VmRSS"     ? &set.rss_bytes
                     : key == "RssAnon" ? &set.anon_bytes
                     : key == "RssFile" ? &set.file_bytes
                                        : nullptr;
    if (field == nullptr) continue;
    std::istringstream value(line.substr(colon + 1));
    int64_t kib = 0;
    if (value >> kib) *field = kib * 1024;
    found |= key == "VmRSS";
  }
  if (!found) return absl::NotFoundError(absl::StrCat("/proc/", pid, "/status: no VmRSS line"));
  return set;
}

absl::StatusOr<int64_t> DiskBytes(const std::string& dir) {
  std::error_code error;
  int64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0) bytes += static_cast<int64_t>(st.st_blocks) * 512;
  }
  if (error) return absl::InternalError(absl::StrCat("du ", dir, ": ", error.message()));
  return bytes;
}

absl::StatusOr<int> FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", strerror(errno)));
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace adaptd::bench
