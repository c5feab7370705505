#include "server/core/write_session.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "server/base/status_macros.h"
#include "server/core/examples.h"
#include "server/persistence/journal.h"
#include "server/persistence/replay.h"
#include "server/stores/faast_label_embedding.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

constexpr size_t kMaxExampleIdBytes = 256;
constexpr uint32_t kMaxPasses = 64;

// What a write message may carry for this store: examples or a sequence (next stores only),
// and passes (fwpkm only).
absl::Status CheckShape(const adapt::v1::StoreSpec& spec, int examples, int sequence,
                        uint32_t passes, bool restart_sequence) {
  const bool next = spec.output().kind() == adapt::v1::OutputSpec::KIND_NEXT;
  if (restart_sequence && sequence == 0) {
    return absl::InvalidArgumentError(
        next ? "restart_sequence: set on a message without items; send the new sequence's "
               "first items in the same message"
             : "restart_sequence: only stores whose output is 'next' learn from sequences");
  }
  if (examples > 0 && sequence > 0) {
    return absl::InvalidArgumentError(
        "sequence: a message carries examples or a sequence, not both");
  }
  if (sequence > 0 && !next) {
    return absl::InvalidArgumentError(
        "sequence: only stores whose output is 'next' learn from sequences; send examples");
  }
  if (examples > 0 && next) {
    return absl::InvalidArgumentError(
        "examples: a store whose output is 'next' learns from sequences; send the items in "
        "the sequence field");
  }
  if (passes > 1) {
    const StoreKind* kind = StoreKinds::Global().Find(spec.kind());
    if (kind == nullptr || !kind->rereads) {
      std::vector<std::string> rereading;
      for (const StoreKind* k : StoreKinds::Global().All()) {
        if (k->rereads) rereading.push_back(k->name);
      }
      return absl::InvalidArgumentError(absl::StrCat("passes: only ",
                                                     absl::StrJoin(rereading, " and "),
                                                     " stores re-read examples, got ", passes));
    }
  }
  if (passes > kMaxPasses) {
    return absl::InvalidArgumentError(
        absl::StrCat("passes: at most ", kMaxPasses, ", got ", passes));
  }
  return absl::OkStatus();
}

absl::Status Prefixed(int message, const absl::Status& status) {
  if (status.ok() || message <= 1) return status;
  return absl::Status(status.code(), absl::StrCat("message ", message, ": ", status.message()));
}

}  // namespace

absl::Status WriteSession::Add(
    const std::string& tenant, const std::string& store,
    const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples,
    const google::protobuf::RepeatedPtrField<adapt::v1::Input>& sequence, uint32_t passes,
    bool restart_sequence, const google::protobuf::RepeatedPtrField<std::string>& sequence_ids) {
  ++messages_;
  if (store_ == nullptr) {
    if (tenant.empty() || store.empty()) {
      return Prefixed(messages_, absl::InvalidArgumentError(absl::StrCat(
                                     tenant.empty() ? "tenant" : "store",
                                     ": required in the first message of the stream")));
    }
    RETURN_IF_ERROR(Open(tenant, store));
  } else if ((!tenant.empty() && tenant != tenant_) || (!store.empty() && store != store_name_)) {
    return Prefixed(messages_, absl::InvalidArgumentError(
                                   absl::StrCat("store: a stream writes to one store; got ", tenant,
                                                "/", store, " after ", tenant_, "/", store_name_)));
  }
  const adapt::v1::StoreSpec spec = store_->spec();
  RETURN_IF_ERROR(Prefixed(
      messages_, CheckShape(spec, examples.size(), sequence.size(), passes, restart_sequence)));
  auto fresh = SkipApplied(examples);
  if (!fresh.ok()) return Prefixed(messages_, fresh.status());
  if (!examples.empty() && (*fresh)->empty()) return absl::OkStatus();  // all resent
  absl::StatusOr<bool> resent = SequenceApplied(sequence_ids, sequence.size());
  if (!resent.ok()) return Prefixed(messages_, resent.status());
  if (*resent) {
    duplicates_ += static_cast<uint64_t>(sequence.size());
    return absl::OkStatus();
  }
  if (kind_ == TxnKind::kAdapt) {
    RETURN_IF_ERROR(Prefixed(
        messages_, context_.quotas->TakeExamples(tenant_, examples.size() + sequence.size())));
  }
  auto encoder = context_.targets->EncoderOf(*store_);
  if (!encoder.ok()) return Prefixed(messages_, encoder.status());
  auto batch =
      sequence.empty()
          ? EncodeExamples(**fresh, spec.output(), **encoder, store_->dim(), context_.max_dim)
          : EncodeSequence(sequence, **encoder, store_->dim(), context_.max_dim);
  if (!batch.ok()) return Prefixed(messages_, batch.status());
  batch->passes = static_cast<int>(std::max<uint32_t>(1, passes));
  batch->restart_sequence = restart_sequence;
  truncated_texts_ += batch->truncated_texts;
  std::vector<const std::string*> ids;
  for (const auto& example : **fresh) ids.push_back(&example.id());
  for (const std::string& id : sequence_ids) ids.push_back(&id);
  RETURN_IF_ERROR(Prefixed(messages_, StageEncoded(*std::move(batch), std::move(ids))));
  if (context_.metrics != nullptr) {
    context_.metrics->RecordBatch(kind_ == TxnKind::kAdapt ? "Adapt" : "Forget",
                                  static_cast<double>(examples.size() + sequence.size()));
  }
  return absl::OkStatus();
}

absl::Status WriteSession::StageEncoded(ExampleBatch batch, std::vector<const std::string*> ids) {
  const adapt::v1::StoreSpec spec = store_->spec();
  if (!spec.output().label_encoder().empty()) {  // label-embedding mode: labels → targets
    auto label_encoder = context_.encoders->LabelEncoderForStore(spec);
    if (!label_encoder.ok()) return label_encoder.status();
    RETURN_IF_ERROR(EmbedLabelTargets(**label_encoder, *store_, &batch));
  }
  RETURN_IF_ERROR(txn_->Add(batch));
  Remember(batch, std::move(ids));
  return absl::OkStatus();
}

absl::Status WriteSession::Open(const std::string& tenant, const std::string& store) {
  ASSIGN_OR_RETURN(WriteTargets::Target target, context_.targets->FindForWrite(tenant, store));
  store_ = std::move(target.store);
  slot_ = std::move(target.slot);
  tenant_ = tenant;
  store_name_ = store;
  // The store's fence as the call began: if another server takes the store over meanwhile,
  // the commit fails (UNAVAILABLE) rather than write past it.
  if (context_.durability != nullptr) fence_ = context_.durability->CurrentFence(tenant, store);
  txn_ = store_->Begin(kind_);
  return absl::OkStatus();
}

absl::StatusOr<adapt::v1::AdaptResponse> WriteSession::Finish() {
  if (store_ == nullptr) {
    return absl::InvalidArgumentError(
        "the stream carried no message: the first must name tenant and store");
  }
  if (kind_ == TxnKind::kAdapt)
    RETURN_IF_ERROR(context_.targets->CheckRoomToWrite(tenant_, *slot_));
  // A store being handed off takes no change (docs/CLUSTER.md, "Hand-off").
  ASSIGN_OR_RETURN(FenceHold hold, context_.targets->EnterFence(tenant_, store_name_));
  absl::StatusOr<CommitResult> committed = CommitLogged();
  if (!committed.ok()) return MovedIfReleased(*slot_, tenant_, store_name_, committed.status());
  const CommitResult& result = *committed;
  if (!context_.targets->StillHolds(tenant_, store_name_, *slot_)) {
    return GoneDuringCall(*slot_, tenant_, store_name_);
  }
  context_.targets->AfterCommit(*slot_, store_, result, kind_);
  if (context_.metrics != nullptr && kind_ == TxnKind::kAdapt) {
    const auto output = store_->spec().output().kind();
    context_.metrics->RecordAdapt(
        tenant_, KindName(store_->spec().kind()),
        output == adapt::v1::OutputSpec::KIND_LABELS   ? "labels"
        : output == adapt::v1::OutputSpec::KIND_VECTOR ? "vector"
                                                       : "next",
        static_cast<double>(result.examples), static_cast<double>(result.prequential.evaluated),
        static_cast<double>(result.prequential.correct), result.prequential.loss_sum);
  }
  adapt::v1::AdaptResponse response;
  response.set_accepted(result.examples + duplicates_);
  response.set_duplicates(duplicates_);
  response.set_truncated_texts(truncated_texts_);
  response.set_version(result.version);
  const PrequentialStats& p = result.prequential;
  response.set_evaluated(p.evaluated);
  response.set_correct(p.correct);
  if (p.evaluated > 0) {
    response.set_accuracy(static_cast<double>(p.correct) / p.evaluated);
    response.set_loss(p.loss_sum / p.evaluated);
  }
  return response;
}

absl::StatusOr<const google::protobuf::RepeatedPtrField<adapt::v1::Example>*>
WriteSession::SkipApplied(const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples) {
  bool any_id = false;
  for (int i = 0; i < examples.size(); ++i) {
    const std::string& id = examples[i].id();
    if (id.size() > kMaxExampleIdBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "examples[", i, "].id: at most ", kMaxExampleIdBytes, " bytes, got ", id.size()));
    }
    any_id = any_id || !id.empty();
  }
  if (!any_id || kind_ != TxnKind::kAdapt || context_.durability == nullptr) return &examples;
  fresh_.Clear();
  absl::flat_hash_set<std::string> in_message;
  for (const auto& example : examples) {
    const std::string& id = example.id();
    if (!id.empty() && (!in_message.insert(id).second || IdApplied(id))) {
      ++duplicates_;
      continue;
    }
    *fresh_.Add() = example;
  }
  return &fresh_;
}

bool WriteSession::IdApplied(const std::string& id) const {
  return seen_ids_.contains(id) ||
         context_.durability->Applied(tenant_, store_name_, store_.get(), id);
}

absl::StatusOr<bool> WriteSession::SequenceApplied(
    const google::protobuf::RepeatedPtrField<std::string>& ids, int items) {
  if (ids.empty()) return false;
  if (ids.size() != items) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence_ids: one per item of sequence (", items, "), got ", ids.size()));
  }
  absl::flat_hash_map<absl::string_view, int> in_message;
  for (int i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    if (id.empty() || id.size() > kMaxExampleIdBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence_ids[", i, "]: 1 to ", kMaxExampleIdBytes, " bytes, got ", id.size()));
    }
    auto [it, fresh] = in_message.try_emplace(id, i);
    if (!fresh) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence_ids[", i, "]: '", id, "' repeats sequence_ids[", it->second, "]"));
    }
  }
  if (kind_ != TxnKind::kAdapt || context_.durability == nullptr) return false;
  int applied = 0;
  int example = -1;
  for (int i = 0; i < ids.size(); ++i) {
    if (IdApplied(ids[i])) {
      ++applied;
      if (example < 0) example = i;
    }
  }
  if (applied == 0) return false;
  if (applied == ids.size()) return true;
  return absl::InvalidArgumentError(
      absl::StrCat("sequence_ids: ", applied, " of the message's ", ids.size(),
                   " items were applied already (sequence_ids[", example, "] = '", ids[example],
                   "'); a sequence message is applied whole or skipped whole, so resend the "
                   "call's messages as they were"));
}

void WriteSession::Remember(const ExampleBatch& batch, std::vector<const std::string*> ids) {
  if (context_.durability == nullptr) return;
  logged_.push_back(batch);
  if (kind_ != TxnKind::kAdapt) return;
  for (const std::string* id : ids) {
    if (!id->empty() && seen_ids_.insert(*id).second) ids_.push_back(*id);
  }
}

absl::StatusOr<CommitResult> WriteSession::CommitLogged() {
  if (context_.durability == nullptr) return store_->Commit(*txn_);
  adapt::v1::WalWrite write;
  write.set_forget(kind_ == TxnKind::kForget);
  for (const auto& batch : logged_) *write.add_batches() = ToWalBatch(batch);
  for (const auto& id : ids_) write.add_ids(id);
  // The figures the call counted as it staged, so that replay commits them without evaluating.
  if (std::optional<PrequentialStats> counted = txn_->StagedPrequential()) {
    *write.mutable_prequential() = ToWalPrequential(*counted);
  }
  return CommitWrite(*context_.durability, tenant_, store_name_, store_.get(), std::move(write),
                     fence_, [this] { return store_->Commit(*txn_); });
}

}  // namespace adaptd
