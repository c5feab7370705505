// EtcdCluster: etcd members as child processes (etcd_cluster.h).
#include "server/etcd/testing/etcd_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"

#ifndef ADAPTD_ETCD_BINARY
#error "ADAPTD_ETCD_BINARY (the etcd binary the tests start) must be defined"
#endif

namespace adaptd::etcd::testing {
namespace {

constexpr char kHost[] = "127.0.0.1";
// How long a membership change is retried while the cluster has no leader or is unhealthy.
constexpr absl::Duration kReconfigureTimeout = absl::Seconds(20);

// Free loopback ports, held open together so that no two are the same.
absl::StatusOr<std::vector<int>> FreePorts(int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status = absl::InternalError("cannot find a free loopback port");
    } else {
      ports.push_back(ntohs(address.sin_port));
    }
    if (fd >= 0) sockets.push_back(fd);
  }
  for (int fd : sockets) close(fd);
  if (!status.ok()) return status;
  return ports;
}

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  const std::string text = contents.str();
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// OK when etcd's member `id` (the one that answered on `client`) has `peer_url`.
absl::Status IsMemberAt(EtcdClient& client, uint64_t id, const std::string& peer_url) {
  absl::StatusOr<etcdserverpb::MemberListResponse> list = client.MemberList();
  if (!list.ok()) return list.status();
  for (const etcdserverpb::Member& member : list->members()) {
    if (member.id() != id) continue;
    for (const std::string& url : member.peerurls()) {
      if (url == peer_url) return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "the etcd answering is not the one started here (its peer URLs are not ", peer_url, ")"));
  }
  return absl::UnavailableError("the answering member is not in its member list yet");
}

}  // namespace

EtcdCluster::EtcdCluster(EtcdClusterOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(EtcdClusterOptions options) {
  if (options.members < 1) return absl::InvalidArgumentError("members: at least 1");
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster(std::move(options)));
  const char* tmp = getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/adaptd-etcd-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  cluster->dir_ = pattern;
  static std::atomic<int> clusters{0};
  cluster->token_ = absl::StrCat("adaptd-test-", getpid(), "-", clusters++, "-",
                                 std::filesystem::path(pattern).filename().string());
  // A port found free can be taken by another process before etcd binds it (tests start
  // side by side): the members are then started again on new ports.
  constexpr int kTries = 4;
  for (int attempt = 1;; ++attempt) {
    absl::Status started = cluster->LaunchAll(attempt);
    if (started.ok()) return cluster;
    cluster->KillAll();
    if (attempt == kTries ||
        started.message().find("address already in use") == std::string::npos) {
      return started;
    }
  }
}

absl::Status EtcdCluster::LaunchAll(int attempt) {
  const int count = options_.members;
  ASSIGN_OR_RETURN(std::vector<int> ports, FreePorts(2 * count));
  members_.clear();
  std::vector<std::string> initial;
  for (int i = 0; i < count; ++i) {
    Member& member = members_.emplace_back();
    member.name = absl::StrCat("m", i);
    member.client_port = ports[2 * i];
    member.peer_port = ports[2 * i + 1];
    member.data_dir = absl::StrCat(dir_, "/", member.name, ".", attempt, ".data");
    initial.push_back(absl::StrCat(member.name, "=", PeerUrl(member)));
  }
  for (int i = 0; i < count; ++i) {
    members_[i].initial_cluster = absl::StrJoin(initial, ",");
    RETURN_IF_ERROR(Launch(i));
  }
  for (int i = 0; i < count; ++i) RETURN_IF_ERROR(WaitUntilAnswers(i, absl::Seconds(20)));
  return absl::OkStatus();
}

void EtcdCluster::KillAll() {
  for (Member& member : members_) {
    if (member.pid <= 0) continue;
    kill(member.pid, SIGKILL);
    waitpid(member.pid, nullptr, 0);
    member.pid = 0;
  }
}

EtcdCluster::~EtcdCluster() {
  KillAll();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string EtcdCluster::PeerUrl(const Member& member) const {
  return absl::StrCat("http://", kHost, ":", member.peer_port);
}

std::string EtcdCluster::endpoint(int i) const {
  return absl::StrCat(options_.ca_file.empty() ? "http://" : "https://", kHost, ":",
                      members_[i].client_port);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) {
    if (!members_[i].removed) out.push_back(endpoint(i));
  }
  return out;
}

bool EtcdCluster::running(int i) const { return members_[i].pid > 0; }

std::string EtcdCluster::log_file(int i) const {
  return absl::StrCat(dir_, "/", members_[i].name, ".log");
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdCluster::Client(absl::Duration call_timeout) const {
  EtcdOptions options;
  options.endpoints = endpoints();
  options.ca_file = options_.ca_file;
  options.cert_file = options_.client_cert_file;
  options.key_file = options_.client_key_file;
  options.call_timeout = call_timeout;
  return EtcdClient::Connect(std::move(options));
}

absl::Status EtcdCluster::Launch(int i) {
  Member& member = members_[i];
  if (member.pid > 0) return absl::FailedPreconditionError(member.name + " is running");
  const std::string client_url = endpoint(i);
  const std::string peer_url = PeerUrl(member);
  std::vector<std::string> args = {
      ADAPTD_ETCD_BINARY, "--name", member.name, "--data-dir", member.data_dir,
      "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
      "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
      "--initial-cluster", member.initial_cluster, "--initial-cluster-state",
      member.join_existing ? "existing" : "new", "--initial-cluster-token", token_,
      // Elections within about a second (etcd defaults to 1 s heartbeats, 10 s elections), so
      // that tests of a lost member stay short, and still not set off by a loaded machine.
      "--heartbeat-interval", "100", "--election-timeout", "1000", "--logger", "zap",
      "--log-outputs", "stderr"};
  if (options_.quota_backend_bytes > 0) {
    args.insert(args.end(), {"--quota-backend-bytes", absl::StrCat(options_.quota_backend_bytes)});
  }
  if (!options_.ca_file.empty()) {
    args.insert(args.end(),
                {"--cert-file", options_.server_cert_file, "--key-file", options_.server_key_file,
                 "--trusted-ca-file", options_.ca_file, "--client-cert-auth"});
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string log = log_file(i);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    // Dies with the test: the signal comes when the thread that forked exits.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  member.pid = pid;
  return absl::OkStatus();
}

absl::Status EtcdCluster::WaitUntilAnswers(int i, absl::Duration timeout) {
  Member& member = members_[i];
  EtcdOptions options;
  options.endpoints = {endpoint(i)};
  options.ca_file = options_.ca_file;
  options.cert_file = options_.client_cert_file;
  options.key_file = options_.client_key_file;
  options.call_timeout = absl::Seconds(1);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (absl::Now() < deadline) {
    if (waitpid(member.pid, nullptr, WNOHANG) == member.pid) {
      member.pid = 0;
      return absl::InternalError(
          absl::StrCat(member.name, " exited; its log ends:\n", Tail(log_file(i))));
    }
    // A new client each time: a channel that found the port closed waits out gRPC's
    // reconnection backoff before it tries again.
    ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::Connect(options));
    absl::StatusOr<etcdserverpb::StatusResponse> status = client->Status(endpoint(i));
    if (status.ok() && status->leader() != 0) {
      // The member answering at the port must be this one, not another test's etcd that took
      // the port first (this one then exits: the next turn sees it).
      last = IsMemberAt(*client, status->header().member_id(), PeerUrl(member));
      if (last.ok()) {
        member.id = status->header().member_id();
        return absl::OkStatus();
      }
    } else {
      last = status.status();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(member.name, " did not answer in ", absl::FormatDuration(timeout), " (",
                   last.ToString(), "); its log ends:\n", Tail(log_file(i))));
}

absl::Status EtcdCluster::Signal(int i, int signal, bool wait) {
  Member& member = members_[i];
  if (member.pid <= 0) return absl::FailedPreconditionError(member.name + " is not running");
  if (kill(member.pid, signal) != 0) return absl::InternalError("kill failed");
  if (!wait) return absl::OkStatus();
  kill(member.pid, SIGCONT);  // a paused member handles SIGTERM only once it runs
  waitpid(member.pid, nullptr, 0);
  member.pid = 0;
  return absl::OkStatus();
}

absl::Status EtcdCluster::Kill(int i) { return Signal(i, SIGKILL, /*wait=*/true); }
absl::Status EtcdCluster::Stop(int i) { return Signal(i, SIGTERM, /*wait=*/true); }
absl::Status EtcdCluster::Pause(int i) {
  RETURN_IF_ERROR(Signal(i, SIGSTOP, /*wait=*/false));
  // Until it has stopped: a request sent after Pause returns is never answered.
  int status = 0;
  if (waitpid(members_[i].pid, &status, WUNTRACED) != members_[i].pid || !WIFSTOPPED(status)) {
    return absl::InternalError(members_[i].name + " did not stop");
  }
  return absl::OkStatus();
}

absl::Status EtcdCluster::Resume(int i) { return Signal(i, SIGCONT, /*wait=*/false); }

absl::Status EtcdCluster::Restart(int i) {
  RETURN_IF_ERROR(Launch(i));
  return WaitUntilAnswers(i, absl::Seconds(20));
}

absl::Status EtcdCluster::Wipe(int i) {
  if (running(i)) return absl::FailedPreconditionError(members_[i].name + " is running");
  std::error_code error;
  std::filesystem::remove_all(members_[i].data_dir, error);
  if (error) return absl::InternalError(error.message());
  return absl::OkStatus();
}

absl::StatusOr<int> EtcdCluster::LeaderIndex() {
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, Client());
  for (int i = 0; i < size(); ++i) {
    if (members_[i].removed || !running(i)) continue;
    absl::StatusOr<etcdserverpb::StatusResponse> status = client->Status(endpoint(i));
    if (!status.ok() || status->leader() == 0) continue;
    for (int j = 0; j < size(); ++j) {
      if (!members_[j].removed && members_[j].id == status->leader()) return j;
    }
  }
  return absl::UnavailableError("no running member knows a leader");
}

absl::Status EtcdCluster::RemoveMember(int i) {
  if (members_[i].removed) return absl::FailedPreconditionError(members_[i].name + " is removed");
  if (members_[i].id == 0) return absl::FailedPreconditionError("member id unknown");
  if (running(i)) RETURN_IF_ERROR(Stop(i));
  members_[i].removed = true;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, Client());
  absl::Status status;
  bool unknown = false;
  const absl::Time deadline = absl::Now() + kReconfigureTimeout;
  for (;;) {
    status = client->MemberRemove(members_[i].id);
    // An earlier try that went unanswered may have removed it.
    if (unknown && absl::IsNotFound(status)) status = absl::OkStatus();
    unknown = unknown || IsOutcomeUnknown(status);
    if (!absl::IsUnavailable(status) || absl::Now() > deadline) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  if (!status.ok()) members_[i].removed = false;
  return status;
}

absl::StatusOr<int> EtcdCluster::AddMember() {
  ASSIGN_OR_RETURN(std::vector<int> ports, FreePorts(2));
  Member member;
  member.name = absl::StrCat("m", size());
  member.client_port = ports[0];
  member.peer_port = ports[1];
  member.data_dir = absl::StrCat(dir_, "/", member.name, ".data");
  member.join_existing = true;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, Client());
  google::protobuf::RepeatedPtrField<etcdserverpb::Member> members;
  const absl::Time deadline = absl::Now() + kReconfigureTimeout;
  for (;;) {
    // etcd refuses to add a member until its leader has heard from every member for 5 s.
    absl::StatusOr<etcdserverpb::MemberAddResponse> added = client->MemberAdd({PeerUrl(member)});
    if (added.ok()) {
      members = added->members();
      break;
    }
    if (absl::StrContains(added.status().message(), "already exists")) {  // an unanswered try
      ASSIGN_OR_RETURN(etcdserverpb::MemberListResponse list, client->MemberList());
      members = list.members();
      break;
    }
    if (!absl::IsUnavailable(added.status()) || absl::Now() > deadline) return added.status();
    absl::SleepFor(absl::Milliseconds(200));
  }
  std::vector<std::string> initial;
  for (const etcdserverpb::Member& m : members) {
    const std::string name = m.name().empty() ? member.name : m.name();
    for (const std::string& url : m.peerurls()) initial.push_back(absl::StrCat(name, "=", url));
  }
  member.initial_cluster = absl::StrJoin(initial, ",");
  members_.push_back(std::move(member));
  const int i = size() - 1;
  RETURN_IF_ERROR(Launch(i));
  RETURN_IF_ERROR(WaitUntilAnswers(i, absl::Seconds(20)));
  return i;
}

}  // namespace adaptd::etcd::testing
