#include "server/core/registry.h"

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace adaptd {
namespace {

absl::Status NotFound(const std::string& tenant, const std::string& store) {
  return absl::NotFoundError(absl::StrCat("store ", tenant, "/", store, " does not exist"));
}

}  // namespace

absl::Status Registry::Insert(const std::string& tenant, const std::string& store,
                              std::shared_ptr<StoreSlot> value) {
  absl::MutexLock lock(&mu_);
  return InsertLocked(tenant, store, std::move(value), /*visible=*/true, nullptr);
}

absl::Status Registry::Reserve(const std::string& tenant, const std::string& store,
                               std::shared_ptr<StoreSlot> value,
                               const std::function<absl::Status()>& reserved) {
  absl::MutexLock lock(&mu_);
  return InsertLocked(tenant, store, std::move(value), /*visible=*/false, reserved);
}

absl::Status Registry::InsertLocked(const std::string& tenant, const std::string& store,
                                    std::shared_ptr<StoreSlot> value, bool visible,
                                    const std::function<absl::Status()>& inserted) {
  auto& stores = tenants_[tenant];
  // Hinted at the end: start-up inserts every store in name order, each placed without a
  // search (elsewhere the hint costs nothing).
  const size_t before = stores.size();
  stores.try_emplace(stores.end(), store, Entry{std::move(value), visible});
  if (stores.size() == before) {
    return absl::AlreadyExistsError(absl::StrCat("store ", tenant, "/", store, " already exists"));
  }
  if (!inserted) return absl::OkStatus();
  absl::Status status = inserted();
  if (!status.ok()) {
    stores.erase(store);
    if (stores.empty()) tenants_.erase(tenant);
  }
  return status;
}

void Registry::Publish(const std::string& tenant, const std::string& store) {
  absl::MutexLock lock(&mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return;
  auto s = t->second.find(store);
  if (s != t->second.end()) s->second.visible = true;
}

void Registry::Abandon(const std::string& tenant, const std::string& store) {
  absl::MutexLock lock(&mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return;
  auto s = t->second.find(store);
  if (s == t->second.end() || s->second.visible) return;
  t->second.erase(s);
  if (t->second.empty()) tenants_.erase(t);
}

absl::StatusOr<std::shared_ptr<StoreSlot>> Registry::Find(const std::string& tenant,
                                                          const std::string& store) const {
  absl::ReaderMutexLock lock(&mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return NotFound(tenant, store);
  auto s = t->second.find(store);
  if (s == t->second.end() || !s->second.visible) return NotFound(tenant, store);
  return s->second.store;
}

absl::StatusOr<std::shared_ptr<StoreSlot>> Registry::Remove(const std::string& tenant,
                                                            const std::string& store) {
  return Remove(tenant, store, nullptr);
}

absl::StatusOr<std::shared_ptr<StoreSlot>> Registry::Remove(
    const std::string& tenant, const std::string& store,
    const std::function<absl::Status()>& removing) {
  absl::MutexLock lock(&mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return NotFound(tenant, store);
  auto s = t->second.find(store);
  if (s == t->second.end() || !s->second.visible) return NotFound(tenant, store);
  if (removing) RETURN_IF_ERROR(removing());
  std::shared_ptr<StoreSlot> value = std::move(s->second.store);
  t->second.erase(s);
  if (t->second.empty()) tenants_.erase(t);
  return value;
}

std::vector<std::pair<std::string, std::shared_ptr<StoreSlot>>> Registry::List(
    const std::string& tenant) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::shared_ptr<StoreSlot>>> out;
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return out;
  for (const auto& [name, entry] : t->second) {
    if (entry.visible) out.emplace_back(name, entry.store);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Registry::Names(
    const std::function<bool(const std::string&, const std::string&)>& keep) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [tenant, stores] : tenants_) {
    for (const auto& [name, entry] : stores) {
      if (entry.visible && (keep == nullptr || keep(tenant, name))) out.emplace_back(tenant, name);
    }
  }
  return out;
}

Registry::Page Registry::ListPage(const std::string& tenant, const std::string& after,
                                  size_t limit) const {
  absl::ReaderMutexLock lock(&mu_);
  Page page;
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return page;
  const auto& stores = t->second;
  for (auto s = after.empty() ? stores.begin() : stores.upper_bound(after); s != stores.end();
       ++s) {
    if (!s->second.visible) continue;
    if (page.stores.size() == limit) {
      page.more = true;
      break;
    }
    page.stores.emplace_back(s->first, s->second.store);
  }
  return page;
}

size_t Registry::size() const {
  absl::ReaderMutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [tenant, stores] : tenants_) {
    for (const auto& [name, entry] : stores) n += entry.visible ? 1 : 0;
  }
  return n;
}

}  // namespace adaptd
