#include "server/durability/local_durability.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace adaptd {
namespace {

// A position is the record's log sequence number, in 8 bytes (the journal's own numbering;
// nothing outside this file reads it).
Position PositionOf(uint64_t lsn) {
  Position position;
  position.bytes.resize(sizeof lsn);
  std::memcpy(position.bytes.data(), &lsn, sizeof lsn);
  return position;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalDurability>> LocalDurability::Open(
    const JournalOptions& options, kernels::Backend* backend,
    std::vector<RecoveredStore>* recovered) {
  ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, Journal::Open(options, backend, recovered));
  return std::unique_ptr<LocalDurability>(new LocalDurability(std::move(journal)));
}

absl::Status LocalDurability::CheckFence(const std::string& tenant, const std::string& name,
                                         const Fence& fence) {
  if (fence.token.empty()) return absl::OkStatus();
  return OwnershipLostError(StoreKey(tenant, name),
                            absl::StrCat("this server writes its data directory alone, and fence '",
                                         fence.token, "' is not its own"));
}

Fence LocalDurability::CurrentFence(const std::string&, const std::string&) const { return {}; }

absl::StatusOr<Position> LocalDurability::AppendCreate(const std::string& tenant,
                                                       const std::string& name,
                                                       std::shared_ptr<Store> store,
                                                       const adapt::v1::StoreSpec& spec,
                                                       bool imported, const Fence& fence) {
  RETURN_IF_ERROR(CheckFence(tenant, name, fence));
  return PositionOf(journal_->AppendCreate(tenant, name, std::move(store), spec, imported));
}

absl::Status LocalDurability::StoreImported(const std::string& tenant, const std::string& name,
                                            const Store* store,
                                            const std::vector<std::string>& applied_ids) {
  return journal_->StoreImported(tenant, name, store, applied_ids);
}

absl::StatusOr<Position> LocalDurability::AppendDelete(const std::string& tenant,
                                                       const std::string& name,
                                                       const Fence& fence) {
  RETURN_IF_ERROR(CheckFence(tenant, name, fence));
  const uint64_t lsn = journal_->AppendDelete(tenant, name);
  return lsn == 0 ? Position{} : PositionOf(lsn);
}

absl::Status LocalDurability::WaitDurable(const Position& position) {
  if (position.bytes.empty()) return absl::OkStatus();
  uint64_t lsn = 0;
  if (position.bytes.size() != sizeof lsn) {
    return absl::InvalidArgumentError("position: not one this data directory's log made");
  }
  std::memcpy(&lsn, position.bytes.data(), sizeof lsn);
  return journal_->WaitDurable(lsn);
}

uint64_t LocalDurability::Incarnation(const std::string& tenant, const std::string& name) const {
  return journal_->Incarnation(tenant, name);
}

void LocalDurability::AppendWrite(const std::string& tenant, const std::string& name,
                                  const Store* store, adapt::v1::WalWrite write, const Fence& fence,
                                  Apply apply, WriteDone done) {
  if (absl::Status fenced = CheckFence(tenant, name, fence); !fenced.ok()) {
    std::move(done)(fenced);
    return;
  }
  std::move(done)(journal_->Commit(tenant, name, store, std::move(write),
                                   [&apply] { return std::move(apply)(); }));
}

absl::Status LocalDurability::AppendPin(const std::string& tenant, const std::string& name,
                                        const Store* store, bool pinned, const Fence& fence) {
  RETURN_IF_ERROR(CheckFence(tenant, name, fence));
  return journal_->LogPin(tenant, name, store, pinned);
}

absl::Status LocalDurability::AppendCompile(const std::string& tenant, const std::string& name,
                                            const Store* store,
                                            const adapt::v1::CompileRequest& request,
                                            const BaseReadout* base, const Fence& fence) {
  RETURN_IF_ERROR(CheckFence(tenant, name, fence));
  return journal_->LogCompile(tenant, name, store, request, base);
}

absl::Status LocalDurability::AppendAutoCompile(const Store* store, std::string* tenant,
                                                std::string* name) {
  return journal_->LogAutoCompile(store, tenant, name);
}

bool LocalDurability::Applied(const std::string& tenant, const std::string& name,
                              const Store* store, const std::string& id) const {
  return journal_->Applied(tenant, name, store, id);
}

std::vector<std::string> LocalDurability::RememberedIds(const std::string& tenant,
                                                        const std::string& name,
                                                        const Store* store) const {
  return journal_->RememberedIds(tenant, name, store);
}

uint64_t LocalDurability::RememberedBytes(const std::string& tenant,
                                          const std::string& name) const {
  return journal_->RememberedBytes(tenant, name);
}

absl::StatusOr<std::shared_ptr<Store>> LocalDurability::Load(
    const std::string& tenant, const std::string& name,
    const std::function<bool(const Store&)>& keep_detached) {
  return journal_->Load(tenant, name, keep_detached);
}

absl::StatusOr<std::shared_ptr<const LinearReadout>> LocalDurability::LoadReadout(
    const std::string& tenant, const std::string& name) {
  return journal_->LoadReadout(tenant, name);
}

absl::StatusOr<bool> LocalDurability::Unload(const std::string& tenant, const std::string& name,
                                             const Store* store) {
  return journal_->Unload(tenant, name, store);
}

absl::Status LocalDurability::Checkpoint() { return journal_->Checkpoint(); }

std::string LocalDurability::CheckpointError(const std::string& tenant,
                                             const std::string& name) const {
  return journal_->CheckpointError(tenant, name);
}

const std::string& LocalDurability::recovery_report() const { return journal_->recovery_report(); }

void LocalDurability::Close() { journal_->Close(); }

}  // namespace adaptd
