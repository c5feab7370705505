// EtcdCommitQueue: the group commit of log records into etcd (docs/DURABLE_LOG.md, "An
// append"). Callers block in Commit; one thread sends one etcd transaction at a time, holding
// every record queued meanwhile (within etcd's limits on operations and bytes): one nested
// transaction per store, comparing the fence's claim revision and that each of its log keys is
// new, so a stale fence fails its own store only. A transaction whose outcome is unknown (sent,
// no answer) is sent again as it was: a store whose keys exist already with the bytes sent was
// committed by the earlier attempt. When no answer comes within the commit timeout, its
// records fail Unavailable with `unknown` set and their stores become uncertain: later records
// of them fail at once, never sent, until ClearUncertain (the owner read the records back).
#ifndef ADAPTD_SERVER_DURABILITY_ETCD_COMMIT_QUEUE_H_
#define ADAPTD_SERVER_DURABILITY_ETCD_COMMIT_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/durability/etcd_fence.h"
#include "server/etcd/etcd_client.h"

namespace adaptd {

class EtcdCommitQueue {
 public:
  struct Options {
    absl::Duration commit_timeout = absl::Seconds(30);
    // Below etcd's defaults (--max-txn-ops 128, --max-request-bytes 1.5 MiB).
    int max_ops = 120;
    size_t max_bytes = 1 << 20;
    // Fault injection for tests: called before each group is sent; an error fails the group
    // as etcd refusing it would (nothing sent, nothing committed).
    std::function<absl::Status()> fault;
    // Observers (optional): a transaction answered (seconds, records); an attempt that failed;
    // a store's records refused for a stale fence.
    std::function<void(double seconds, size_t records)> on_commit;
    std::function<void()> on_error;
    std::function<void()> on_fence_failure;
  };

  EtcdCommitQueue(etcd::EtcdClient* client, Options options);
  // Stops; records still queued fail Unavailable.
  ~EtcdCommitQueue();

  // Commits `value` under `log_key`, one of `store`'s records (a store's records commit in the
  // order they were queued), if `fence` still holds. OK once committed; OwnershipLostError when
  // the fence is stale; Unavailable when it was not committed, or (with *unknown set) when no
  // one can say.
  absl::Status Commit(const std::string& store, const std::string& log_key, std::string value,
                      const EtcdFence& fence, bool* unknown) ABSL_LOCKS_EXCLUDED(mu_);
  // `store`'s records are sent again (its uncertain ones were read back).
  void ClearUncertain(const std::string& store) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Item {
    std::string store, log_key, value;
    EtcdFence fence;
    absl::Status status;
    bool unknown = false;
    bool done = false;
  };
  using Group = std::vector<std::pair<std::string, std::vector<Item*>>>;

  void Run();
  // The next group from the queue; records of uncertain stores are failed instead.
  Group TakeGroup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CommitGroup(const Group& group);
  // Sets each record's result from an answered transaction.
  void Settle(const Group& group, const etcdserverpb::TxnResponse& response);

  etcd::EtcdClient* const client_;
  const Options options_;
  absl::Mutex mu_;
  std::deque<Item*> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> uncertain_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_ETCD_COMMIT_QUEUE_H_
