// LocalDurability: the Durability of one server's data directory, the write-ahead log and
// state database of server/persistence/journal.h. One server writes the directory alone, so a
// store's fence is constant (the empty token): an append that carries another fence was made
// for another holder and fails with OwnershipLostError. Appends complete on the calling
// thread (a write waits there for its group commit, as the journal does).
#ifndef ADAPTD_SERVER_DURABILITY_LOCAL_DURABILITY_H_
#define ADAPTD_SERVER_DURABILITY_LOCAL_DURABILITY_H_

#include <memory>
#include <string>
#include <vector>

#include "server/durability/durability.h"
#include "server/persistence/journal.h"

namespace adaptd {

class LocalDurability final : public Durability {
 public:
  // Recovers the stores under options.data_dir into `recovered` (Journal::Open).
  static absl::StatusOr<std::unique_ptr<LocalDurability>> Open(
      const JournalOptions& options, kernels::Backend* backend,
      std::vector<RecoveredStore>* recovered);

  Fence CurrentFence(const std::string& tenant, const std::string& name) const override;
  absl::StatusOr<Position> AppendCreate(const std::string& tenant, const std::string& name,
                                        std::shared_ptr<Store> store,
                                        const adapt::v1::StoreSpec& spec, bool imported,
                                        const Fence& fence) override;
  absl::Status StoreImported(const std::string& tenant, const std::string& name, const Store* store,
                             const std::vector<std::string>& applied_ids) override;
  absl::StatusOr<Position> AppendDelete(const std::string& tenant, const std::string& name,
                                        const Fence& fence) override;
  absl::Status WaitDurable(const Position& position) override;
  uint64_t Incarnation(const std::string& tenant, const std::string& name) const override;
  void AppendWrite(const std::string& tenant, const std::string& name, const Store* store,
                   adapt::v1::WalWrite write, const Fence& fence, Apply apply,
                   WriteDone done) override;
  absl::Status AppendPin(const std::string& tenant, const std::string& name, const Store* store,
                         bool pinned, const Fence& fence) override;
  absl::Status AppendCompile(const std::string& tenant, const std::string& name, const Store* store,
                             const adapt::v1::CompileRequest& request, const BaseReadout* base,
                             const Fence& fence) override;
  absl::Status AppendAutoCompile(const Store* store, std::string* tenant,
                                 std::string* name) override;
  bool Applied(const std::string& tenant, const std::string& name, const Store* store,
               const std::string& id) const override;
  std::vector<std::string> RememberedIds(const std::string& tenant, const std::string& name,
                                         const Store* store) const override;
  uint64_t RememberedBytes(const std::string& tenant, const std::string& name) const override;
  absl::StatusOr<std::shared_ptr<Store>> Load(
      const std::string& tenant, const std::string& name,
      const std::function<bool(const Store&)>& keep_detached = nullptr) override;
  absl::StatusOr<std::shared_ptr<const LinearReadout>> LoadReadout(
      const std::string& tenant, const std::string& name) override;
  absl::StatusOr<bool> Unload(const std::string& tenant, const std::string& name,
                              const Store* store) override;
  absl::Status Checkpoint() override;
  std::string CheckpointError(const std::string& tenant, const std::string& name) const override;
  const std::string& recovery_report() const override;
  void Close() override;

  Journal& journal() { return *journal_; }

 private:
  explicit LocalDurability(std::unique_ptr<Journal> journal) : journal_(std::move(journal)) {}
  // OK for the constant fence, else OwnershipLostError for tenant/name.
  static absl::Status CheckFence(const std::string& tenant, const std::string& name,
                                 const Fence& fence);

  std::unique_ptr<Journal> journal_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_LOCAL_DURABILITY_H_
