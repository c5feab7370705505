// EtcdWatcher: follows every key under a prefix, as a full read and then etcd's Watch of the
// changes after it, so that a caller keeps an in-memory copy of the range that is never
// missing a change (docs/CLUSTER_ETCD.md, "Registration and leases").
//
// - First `on_reset` gets the whole range at one revision; then `on_events` gets every change
//   after it, in revision order, each change exactly once.
// - When a stream breaks (its member died, lost its leader, or stopped answering: a progress
//   request left unanswered for `stall_timeout`), the watch is opened again on the next
//   endpoint from the revision after the last one delivered, so nothing is missed or repeated.
// - When that revision was compacted meanwhile (the changes can no longer be replayed),
//   `on_reset` gets the whole range again at a new revision.
//
// Thread-safety: the callbacks run on the watcher's own thread, one at a time, and never once
// the destructor returned; they must not destroy the watcher. revision() and resets() may be
// called from any thread.
#ifndef ADAPTD_SERVER_ETCD_ETCD_WATCHER_H_
#define ADAPTD_SERVER_ETCD_ETCD_WATCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"
#include "server/etcd/etcd_client.h"

namespace adaptd::etcd {

class EtcdWatcher {
 public:
  struct Callbacks {
    // Every key under the prefix at `revision` (at the start, and after a compaction).
    std::function<void(const std::vector<mvccpb::KeyValue>& kvs, int64_t revision)> on_reset;
    // Changes after the last delivered revision, in order (a transaction's changes together).
    std::function<void(const std::vector<mvccpb::Event>& events)> on_events;
  };
  struct Options {
    // A stream that answers nothing (not even a progress request, sent every third of it) for
    // this long is given up for the next endpoint.
    absl::Duration stall_timeout = absl::Seconds(3);
    // The pause before a failed read or stream is tried again (on the next endpoint).
    absl::Duration retry_delay = absl::Milliseconds(200);
  };

  // Starts following `prefix` on a thread of its own; `client` must outlive the watcher. The
  // first reset may come after Start returns (etcd unreachable: it is retried until it is not).
  static std::unique_ptr<EtcdWatcher> Start(EtcdClient* client, std::string prefix,
                                            Callbacks callbacks, Options options);
  static std::unique_ptr<EtcdWatcher> Start(EtcdClient* client, std::string prefix,
                                            Callbacks callbacks) {
    return Start(client, std::move(prefix), std::move(callbacks), Options());
  }
  // Stops the stream and the thread; no callback runs after it returns.
  ~EtcdWatcher();
  EtcdWatcher(const EtcdWatcher&) = delete;
  EtcdWatcher& operator=(const EtcdWatcher&) = delete;

  // The revision delivered last (0 before the first reset): every change up to it is delivered.
  int64_t revision() const;
  // How many times on_reset ran, and how many Watch streams were opened.
  int resets() const;
  int streams() const;
  // Waits until revision() >= `revision`; false when `timeout` passed first.
  bool WaitFor(int64_t revision, absl::Duration timeout) const;

 private:
  struct Impl;
  explicit EtcdWatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace adaptd::etcd

#endif  // ADAPTD_SERVER_ETCD_ETCD_WATCHER_H_
