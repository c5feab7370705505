// HotStores: the hot list of each shard a cluster member holds (docs/CLUSTER_ETCD.md, "Keys"
// PREFIX/hot/SSSS and "Failover"): the shard's most recently used stores, most recent first,
// which the next holder restores in the background before any call asks for them. The list is
// made from when each store was last called (StoreSlot's last use, recorded by every lookup of
// a call) and what the previous holder left:
//   - the stores called since this member adopted the shard, most recent first;
//   - then the previous holder's list, in its order, for its stores not called here since
//     (a store loaded by the restore is not called by it: its use stamp after the restore is
//     remembered, and only a later use counts);
//   - at most `size` names.
// A shard's list is unknown until the previous holder's has been read (Inherit), so nothing
// overwrites it before it is read.
//
// The value in etcd is the names "tenant/store", one a line (names hold no '/' or newline).
//
// Thread-safety: every method may be called concurrently.
#ifndef ADAPTD_SERVER_CLUSTER_HOT_STORES_H_
#define ADAPTD_SERVER_CLUSTER_HOT_STORES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace adaptd::cluster {

inline constexpr size_t kHotListSize = 64;

// The hot list's value in etcd, and back ("tenant/store" names; empty lines skipped).
std::string EncodeHotList(const std::vector<std::string>& keys);
std::vector<std::string> DecodeHotList(absl::string_view value);

// A store of a shard and when it was last used (ns since the epoch; 0: not since start).
struct StoreUse {
  std::string key;  // "tenant/store"
  int64_t last_use_nanos = 0;
};

class HotStores {
 public:
  explicit HotStores(size_t size = kHotListSize) : size_(size) {}

  // The shard is served here from `now_nanos` on; its list is unknown until Inherit.
  void Adopted(int shard, int64_t now_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // The list the previous holder left (as etcd holds it, so nothing needs writing while the
  // list stays so).
  void Inherit(int shard, std::vector<std::string> list) ABSL_LOCKS_EXCLUDED(mu_);
  // The restore loaded `key`; `stamp` is its last use just after (the load's own).
  void Restored(int shard, const std::string& key, int64_t stamp) ABSL_LOCKS_EXCLUDED(mu_);
  // The shard is no longer served here.
  void Released(int shard) ABSL_LOCKS_EXCLUDED(mu_);

  // The shard's list from its stores' uses (`uses`: every store of the shard held here), when
  // it differs from what etcd holds; nullopt when it does not, or is unknown yet.
  std::optional<std::vector<std::string>> Changed(int shard,
                                                  const std::vector<StoreUse>& uses) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // `list` is what etcd now holds for the shard.
  void Written(int shard, std::vector<std::string> list) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Shard {
    int64_t adopted_nanos = 0;
    bool known = false;                       // the previous holder's list was read
    std::vector<std::string> inherited;       // the previous holder's list
    std::map<std::string, int64_t> restored;  // key -> its use stamp after the restore
    std::vector<std::string> written;         // what etcd holds
  };
  const size_t size_;
  mutable absl::Mutex mu_;
  std::map<int, Shard> shards_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_HOT_STORES_H_
