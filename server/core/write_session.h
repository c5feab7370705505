// WriteSession: one Adapt or Forget call, from its first message to its durable commit.
// Each message is validated, its resent examples skipped, its inputs encoded and staged in the
// store's transaction; Finish checks the tenant's room, enters the store's write fence,
// appends the call through the Durability with the store's fence as the call began, and
// applies it once durable. What it needs of the stores is WriteTargets; it holds no
// engine internals.
#ifndef ADAPTD_SERVER_CORE_WRITE_SESSION_H_
#define ADAPTD_SERVER_CORE_WRITE_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/core/remembered_predictions.h"
#include "server/core/store_slot.h"
#include "server/core/write_fence.h"
#include "server/durability/durability.h"
#include "server/encoders/encoder_set.h"
#include "server/metrics/metrics.h"
#include "server/quota/tenant_quotas.h"
#include "server/stores/store.h"

namespace adaptd {

// What a write session needs of the stores it writes (StoreDirectory implements it).
class WriteTargets {
 public:
  struct Target {
    std::shared_ptr<StoreSlot> slot;
    std::shared_ptr<Store> store;  // the whole store, loaded first when warm or cold
  };
  virtual ~WriteTargets() = default;
  // tenant/store's slot and whole store; NotFound naming it.
  virtual absl::StatusOr<Target> FindForWrite(const std::string& tenant,
                                              const std::string& store) = 0;
  // The store's encoder, checked against the fingerprint the store recorded.
  virtual absl::StatusOr<const Encoder*> EncoderOf(const Store& store) const = 0;
  // RESOURCE_EXHAUSTED naming the tenant's quota or the memory budget a write would pass.
  virtual absl::Status CheckRoomToWrite(const std::string& tenant, const StoreSlot& slot) const = 0;
  // Enters tenant/store's fence for one change (UNAVAILABLE while it moves).
  virtual absl::StatusOr<FenceHold> EnterFence(const std::string& tenant,
                                               const std::string& store) = 0;
  // Whether `slot` is still tenant/store's (not deleted or replaced during the call).
  virtual bool StillHolds(const std::string& tenant, const std::string& store,
                          const StoreSlot& slot) const = 0;
  // What tenant/store (`found`) remembers of the predictions it served: null when its spec has
  // no feedback window (ReadTargets has the same).
  virtual std::shared_ptr<RememberedPredictions> RememberedOf(const std::string& tenant,
                                                              const std::string& store,
                                                              const Store& found) const = 0;
  // What follows a commit: metrics, the slot's size, automatic compiles.
  virtual void AfterCommit(StoreSlot& slot, const std::shared_ptr<Store>& store,
                           const CommitResult& result, TxnKind kind) = 0;
};

// Everything a write session uses; each must outlive it.
struct WriteContext {
  WriteTargets* targets = nullptr;
  Durability* durability = nullptr;  // null: nothing is durable
  const EncoderSet* encoders = nullptr;
  TenantQuotas* quotas = nullptr;
  Metrics* metrics = nullptr;  // nullable
  int64_t max_dim = 0;
};

// One Adapt or Forget call (or one Feedback call, which is an Adapt of remembered keys):
// messages are staged as they arrive, and Finish commits them all
// at once. Belongs to one thread at a time.
class WriteSession {
 public:
  // Stages one message: examples, or (stores whose output is `next`) a sequence, fed
  // `passes` times (0 means 1); `restart_sequence` makes the sequence a new one; `sequence_ids`
  // (empty, or one per item) make a resent message a duplicate. The first message names the
  // store; later ones may repeat the same name.
  absl::Status Add(const std::string& tenant, const std::string& store,
                   const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples,
                   const google::protobuf::RepeatedPtrField<adapt::v1::Input>& sequence = {},
                   uint32_t passes = 0, bool restart_sequence = false,
                   const google::protobuf::RepeatedPtrField<std::string>& sequence_ids = {});
  // Commits everything staged: accepted count, version and prequential figures (a Forget
  // call reads `accepted` as the count forgotten).
  absl::StatusOr<adapt::v1::AdaptResponse> Finish();

  // One whole Feedback call (write_session_feedback.cc, docs/FEEDBACK.md), on a fresh session
  // of kind kAdapt: every item validated first, ids the store applied skipped, the others'
  // keys found among the predictions it remembers (NOT_FOUND naming the window otherwise),
  // then staged and committed as Adapt commits the same examples. Nothing is applied unless
  // every item is.
  absl::StatusOr<adapt::v1::FeedbackResponse> Feedback(const adapt::v1::FeedbackRequest& request);

  WriteSession(const WriteContext& context, TxnKind kind) : context_(context), kind_(kind) {}

 private:
  const WriteContext context_;
  const TxnKind kind_;
  int messages_ = 0;
  std::string tenant_, store_name_;
  std::shared_ptr<StoreSlot> slot_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<Txn> txn_;
  Fence fence_;  // the store's fence when the call began
  // Resolves tenant/store and begins its transaction (the call's first message).
  absl::Status Open(const std::string& tenant, const std::string& store);
  // The batch of `request`'s items not applied before, their ids, and how many of them the
  // served prediction had right.
  struct FeedbackBatch {
    ExampleBatch batch;
    std::vector<const std::string*> ids;
    uint64_t served_correct = 0;
    uint64_t served_evaluated = 0;                      // label stores: the items staged
    double delay_seconds_sum = 0;                       // from each staged item's prediction to now
    std::shared_ptr<RememberedPredictions> remembered;  // counts the served figures once durable
  };
  absl::StatusOr<FeedbackBatch> StageableFeedback(const adapt::v1::FeedbackRequest& request);
  // Stages `batch` as Add stages one message of examples.
  absl::Status StageEncoded(ExampleBatch batch, std::vector<const std::string*> ids);
  // What the durability records at Finish: the encoded batches and
  // the example ids they apply; examples whose id was applied before are skipped and counted.
  absl::StatusOr<const google::protobuf::RepeatedPtrField<adapt::v1::Example>*> SkipApplied(
      const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples);
  // A sequence message's ids: true when every item was applied before (the message is a
  // duplicate), false when none was; an error for a wrong count, a repeat or a mix.
  absl::StatusOr<bool> SequenceApplied(const google::protobuf::RepeatedPtrField<std::string>& ids,
                                       int items);
  bool IdApplied(const std::string& id) const;
  void Remember(const ExampleBatch& batch, std::vector<const std::string*> ids);
  absl::StatusOr<CommitResult> CommitLogged();
  google::protobuf::RepeatedPtrField<adapt::v1::Example> fresh_;
  std::vector<ExampleBatch> logged_;
  std::vector<std::string> ids_;
  absl::flat_hash_set<std::string> seen_ids_;
  uint64_t duplicates_ = 0;
  uint64_t truncated_texts_ = 0;  // AdaptResponse.truncated_texts
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_WRITE_SESSION_H_
