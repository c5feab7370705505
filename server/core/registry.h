// Registry: the stores of every tenant, by name, each in its StoreSlot (loaded or not).
// Thread-safe; lookups take a shared lock. Slots are shared_ptr so a call that found a store
// keeps it alive if it is deleted meanwhile.
// A name can be reserved for a store whose creation is not durable yet: lookups do not see it
// until it is published.
#ifndef ADAPTD_SERVER_CORE_REGISTRY_H_
#define ADAPTD_SERVER_CORE_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/store_slot.h"

namespace adaptd {

class Registry {
 public:
  // AlreadyExists when tenant/store is taken.
  absl::Status Insert(const std::string& tenant, const std::string& store,
                      std::shared_ptr<StoreSlot> value);
  // Reserves tenant/store for `value` and runs `reserved` under the registry's lock (the log
  // records the creation there): AlreadyExists when the name is taken or reserved, and
  // `reserved`'s error (the name is free again) when it fails. Find, List, Remove and size()
  // do not see it until Publish; Abandon drops it.
  absl::Status Reserve(const std::string& tenant, const std::string& store,
                       std::shared_ptr<StoreSlot> value,
                       const std::function<absl::Status()>& reserved);
  void Publish(const std::string& tenant, const std::string& store);
  void Abandon(const std::string& tenant, const std::string& store);
  // NotFound naming tenant/store.
  absl::StatusOr<std::shared_ptr<StoreSlot>> Find(const std::string& tenant,
                                                  const std::string& store) const;
  absl::StatusOr<std::shared_ptr<StoreSlot>> Remove(const std::string& tenant,
                                                    const std::string& store);
  // Same, and runs `removing` under the registry's lock just before the removal (the log
  // records the deletion there); when it fails, its error, and the store stays.
  absl::StatusOr<std::shared_ptr<StoreSlot>> Remove(const std::string& tenant,
                                                    const std::string& store,
                                                    const std::function<absl::Status()>& removing);
  // The tenant's stores in name order (empty for an unknown tenant).
  std::vector<std::pair<std::string, std::shared_ptr<StoreSlot>>> List(
      const std::string& tenant) const;
  // One page of the tenant's stores in name order: at most `limit` of those named after `after`
  // (from the first when empty). `more` says whether further stores follow the page. Costs the
  // page, not the tenant: the lookup starts at `after`.
  struct Page {
    std::vector<std::pair<std::string, std::shared_ptr<StoreSlot>>> stores;
    bool more = false;
  };
  Page ListPage(const std::string& tenant, const std::string& after, size_t limit) const;
  // Every visible store as (tenant, store), in name order; `keep` (optional) filters, under
  // the registry's lock, so it must be quick.
  std::vector<std::pair<std::string, std::string>> Names(
      const std::function<bool(const std::string&, const std::string&)>& keep = nullptr) const;
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<StoreSlot> store;
    bool visible = true;  // false while reserved
  };
  absl::Status InsertLocked(const std::string& tenant, const std::string& store,
                            std::shared_ptr<StoreSlot> value, bool visible,
                            const std::function<absl::Status()>& inserted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::map<std::string, Entry>> tenants_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_REGISTRY_H_
