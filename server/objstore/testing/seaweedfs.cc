#include "server/objstore/testing/seaweedfs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace adaptd::testing_util {
namespace {

constexpr int kPortCount = 8;
constexpr int kMasterPort = 0;
constexpr int kS3Port = 6;

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Free loopback ports, all held at once so that they differ, then released for the server.
absl::StatusOr<std::vector<int>> FreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = Loopback(0);
    socklen_t length = sizeof(address);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status = absl::InternalError(absl::StrCat("free port: ", std::strerror(errno)));
    } else {
      ports.push_back(ntohs(address.sin_port));
    }
    if (fd >= 0) fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  if (!status.ok()) return status;
  return ports;
}

// The answer (status line, headers and body) of an HTTP server on the port to GET `path`;
// empty when none answers.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address = Loopback(port);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) answer.append(buffer, n);
    }
  }
  close(fd);
  return absl::StartsWith(answer, "HTTP/") ? answer : "";
}

// The volumes the master knows of, from its /dir/status ("Volumes":N of the one data node).
int RegisteredVolumes(const std::string& status) {
  const size_t at = status.find("\"Volumes\":");
  int volumes = -1;
  if (at == std::string::npos) return -1;
  const size_t start = at + 10;
  const size_t end = status.find_first_not_of("0123456789", start);
  return absl::SimpleAtoi(status.substr(start, end - start), &volumes) ? volumes : -1;
}

int VolumesOnDisk(const std::string& dir) {
  int count = 0;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
    if (entry.path().extension() == ".dat") ++count;
  }
  return count;
}

std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SeaweedFs>> SeaweedFs::Create() {
  std::unique_ptr<SeaweedFs> server(new SeaweedFs());
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/adaptd-seaweedfs-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  server->dir_ = pattern;
  server->log_path_ = server->dir_ + "/weed.log";
  std::filesystem::create_directories(server->dir_ + "/data");
  std::ofstream config(server->dir_ + "/s3.json");
  config << R"({"identities":[{"name":"adaptd","credentials":[{"accessKey":")"
         << server->access_key_ << R"(","secretKey":")" << server->secret_key_
         << R"("}],"actions":["Admin","Read","Write","List","Tagging"]}]})";
  config.close();
  auto ports = FreePorts(kPortCount);
  if (!ports.ok()) return ports.status();
  server->ports_ = *std::move(ports);
  absl::Status started = server->Start();
  if (!started.ok()) return started;
  return server;
}

SeaweedFs::~SeaweedFs() {
  Kill();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string SeaweedFs::endpoint() const {
  return absl::StrCat("http://127.0.0.1:", ports_[kS3Port]);
}

std::vector<std::string> SeaweedFs::Arguments() const {
  const std::vector<int>& p = ports_;
  return {ADAPTD_WEED_BINARY, "server", absl::StrCat("-dir=", dir_, "/data"), "-ip=127.0.0.1",
          "-ip.bind=127.0.0.1", absl::StrCat("-master.port=", p[0]),
          absl::StrCat("-master.port.grpc=", p[1]), "-master.volumeSizeLimitMB=64",
          // A restart on the same data waits one election timeout (10 s by default) for the
          // lone master to lead again.
          "-master.electionTimeout=1s", absl::StrCat("-volume.port=", p[2]),
          absl::StrCat("-volume.port.grpc=", p[3]), "-volume.max=0", "-volume.preStopSeconds=0",
          "-filer", absl::StrCat("-filer.port=", p[4]), absl::StrCat("-filer.port.grpc=", p[5]),
          absl::StrCat("-filer.localSocket=", dir_, "/filer.sock"), "-s3",
          absl::StrCat("-s3.port=", p[6]), absl::StrCat("-s3.port.grpc=", p[7]),
          absl::StrCat("-s3.localSocket=", dir_, "/s3.sock"), "-s3.port.iceberg=0",
          "-s3.port.lance=0", absl::StrCat("-s3.config=", dir_, "/s3.json")};
}

absl::Status SeaweedFs::Start() {
  if (running()) return absl::FailedPreconditionError("SeaweedFS: already running");
  const std::vector<std::string> arguments = Arguments();
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0)
    return absl::InternalError(absl::StrCat("open ", log_path_, ": ", std::strerror(errno)));
  const pid_t parent = getpid();
  const absl::Time begin = absl::Now();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the test is already gone
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log);
  pid_ = pid;
  absl::Status ready = WaitUntilAnswering(absl::Seconds(60));
  last_start_time_ = absl::Now() - begin;
  if (!ready.ok()) Kill();
  return ready;
}

absl::Status SeaweedFs::WaitUntilAnswering(absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  const int volumes = VolumesOnDisk(dir_ + "/data");
  while (absl::Now() < deadline) {
    int wait_status = 0;
    if (waitpid(pid_, &wait_status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("SeaweedFS (", ADAPTD_WEED_BINARY,
                                              ") exited at start; its log ends:\n",
                                              LogTail(log_path_)));
    }
    // S3 answering is not enough: until the volume server has told the master of every volume
    // on disk, reads of what they hold fail (HTTP 500, "volume N not found").
    if (!HttpGet(ports_[kS3Port], "/").empty() &&
        RegisteredVolumes(HttpGet(ports_[kMasterPort], "/dir/status")) >= volumes) {
      return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("SeaweedFS: S3 not answering after ",
                                                  absl::FormatDuration(limit), "; its log ends:\n",
                                                  LogTail(log_path_)));
}

void SeaweedFs::Signal(int signal, absl::Duration grace) {
  if (!running()) return;
  kill(pid_, signal);
  const absl::Time deadline = absl::Now() + grace;
  while (waitpid(pid_, nullptr, WNOHANG) == 0) {
    if (absl::Now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  pid_ = -1;
}

void SeaweedFs::Stop(absl::Duration grace) { Signal(SIGTERM, grace); }

void SeaweedFs::Kill() { Signal(SIGKILL, absl::Seconds(10)); }

}  // namespace adaptd::testing_util
