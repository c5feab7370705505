// EtcdCluster (tests only): a real etcd cluster of 1 or 3 members, each a child process of the
// test on free loopback ports, with its data directory and log file under a temporary directory
// that the destructor removes (after killing every member). The children get SIGKILL when the
// thread that started them exits (PR_SET_PDEATHSIG), so a crashed test leaves no etcd running.
// Members are numbered in the order they were added; a removed one keeps its number. Not
// thread-safe: one test thread drives it.
#ifndef ADAPTD_SERVER_ETCD_TESTING_ETCD_CLUSTER_H_
#define ADAPTD_SERVER_ETCD_TESTING_ETCD_CLUSTER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/etcd/etcd_client.h"

namespace adaptd::etcd::testing {

struct EtcdClusterOptions {
  int members = 3;
  // etcd's --quota-backend-bytes (0: etcd's default).
  int64_t quota_backend_bytes = 0;
  // Clients over https with a client certificate: the PEM files of a CA that signed a
  // certificate for 127.0.0.1 (server) and one for the client (empty: plain http).
  std::string ca_file;
  std::string server_cert_file;
  std::string server_key_file;
  std::string client_cert_file;  // what Client() presents
  std::string client_key_file;
};

class EtcdCluster {
 public:
  // Starts the members and waits until each answers a Status call with a leader known.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(EtcdClusterOptions options);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // The client endpoints (http:// or https://HOST:PORT) of the members not removed, running
  // or not, in member order.
  std::vector<std::string> endpoints() const;
  std::string endpoint(int i) const;
  int size() const { return static_cast<int>(members_.size()); }
  bool running(int i) const;

  absl::Status Kill(int i);     // SIGKILL, and waits for it
  absl::Status Stop(int i);     // SIGTERM, and waits for it
  absl::Status Restart(int i);  // starts it again on its data directory, waits until it answers
  absl::Status Wipe(int i);     // deletes its data directory (stopped members only)
  absl::Status Pause(int i);    // SIGSTOP, and waits until it has stopped
  absl::Status Resume(int i);   // SIGCONT

  // The member etcd reports as leader (asked of the running members).
  absl::StatusOr<int> LeaderIndex();
  // etcd's member remove of member `i` (stopped first when running).
  absl::Status RemoveMember(int i);
  // etcd's member add, then a new member on an empty data directory that joins the cluster
  // (--initial-cluster-state existing); its number, once it answers.
  absl::StatusOr<int> AddMember();

  // A client of the members not removed (for the harness's own calls, and for tests).
  absl::StatusOr<std::unique_ptr<EtcdClient>> Client(
      absl::Duration call_timeout = absl::Seconds(2)) const;
  // The log file of member `i` (etcd's output).
  std::string log_file(int i) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::string data_dir;
    std::string initial_cluster;
    bool join_existing = false;
    pid_t pid = 0;
    bool removed = false;
    uint64_t id = 0;  // etcd's member id, once known
  };

  explicit EtcdCluster(EtcdClusterOptions options);
  std::string PeerUrl(const Member& member) const;
  // Every member on new free ports, data directories of this `attempt`, until each answers.
  absl::Status LaunchAll(int attempt);
  void KillAll();
  absl::Status Launch(int i);
  absl::Status WaitUntilAnswers(int i, absl::Duration timeout);
  absl::Status Signal(int i, int signal, bool wait);

  EtcdClusterOptions options_;
  std::string dir_;
  std::string token_;
  std::vector<Member> members_;
};

}  // namespace adaptd::etcd::testing

#endif  // ADAPTD_SERVER_ETCD_TESTING_ETCD_CLUSTER_H_
