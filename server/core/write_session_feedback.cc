// WriteSession::Feedback: one Feedback call as an Adapt of the keys the store remembers of
// the predictions it served (docs/FEEDBACK.md, "From feedback to a write").
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/core/examples.h"
#include "server/core/write_session.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

std::string ItemField(int i, absl::string_view field) {
  return absl::StrCat("items[", i, "].", field);
}

// The item's truth against the store's output: a label for label stores, M floats for vector
// stores, or none.
absl::Status CheckTruth(const adapt::v1::FeedbackItem& item, int i,
                        const adapt::v1::OutputSpec& output) {
  const bool labels = output.kind() == adapt::v1::OutputSpec::KIND_LABELS;
  switch (item.truth_case()) {
    case adapt::v1::FeedbackItem::kLabel:
      if (!labels) {
        return absl::InvalidArgumentError(absl::StrCat(
            ItemField(i, "label"), ": a vector:", output.dim(), " store takes a vector"));
      }
      return CheckLabel(item.label(), ItemField(i, "label"));
    case adapt::v1::FeedbackItem::kVector:
      if (!labels)
        return CheckTargetVector(item.vector().values(), output.dim(), ItemField(i, "vector"));
      return absl::InvalidArgumentError(
          absl::StrCat(ItemField(i, "vector"), ": a label store takes a label"));
    default:
      return absl::OkStatus();  // the served prediction confirmed
  }
}

// Every item checked before anything is looked up: its id well-formed and given once, its
// truth of the store's output.
absl::StatusOr<std::vector<PredictionId>> ValidateFeedback(
    const adapt::v1::FeedbackRequest& request, const adapt::v1::StoreSpec& spec) {
  const int n = request.items_size();
  if (n == 0 || n > kMaxFeedbackItems) {
    return absl::InvalidArgumentError(
        absl::StrCat("items: 1 to ", kMaxFeedbackItems, " items, got ", n));
  }
  std::vector<PredictionId> ids(n);
  absl::flat_hash_map<absl::string_view, int> seen;
  for (int i = 0; i < n; ++i) {
    const adapt::v1::FeedbackItem& item = request.items(i);
    const std::string field = ItemField(i, "prediction_id");
    ASSIGN_OR_RETURN(ids[i], ParsePredictionId(item.prediction_id(), field));
    auto [it, fresh] = seen.try_emplace(item.prediction_id(), i);
    if (!fresh) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": repeats items[", it->second, "].prediction_id"));
    }
    RETURN_IF_ERROR(CheckTruth(item, i, spec.output()));
  }
  return ids;
}

}  // namespace

absl::StatusOr<WriteSession::FeedbackBatch> WriteSession::StageableFeedback(
    const adapt::v1::FeedbackRequest& request) {
  const adapt::v1::StoreSpec spec = store_->spec();
  if (spec.feedback().count() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "spec.feedback: store ", tenant_, "/", store_name_,
        " has no feedback window, so its predictions carry no ids (docs/FEEDBACK.md); send "
        "the inputs with Adapt"));
  }
  ASSIGN_OR_RETURN(std::vector<PredictionId> ids, ValidateFeedback(request, spec));
  const std::shared_ptr<RememberedPredictions> remembered =
      context_.targets->RememberedOf(tenant_, store_name_, *store_);
  if (remembered == nullptr) return GoneDuringCall(*slot_, tenant_, store_name_);
  const bool labels = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS;
  const absl::Time now = absl::Now();
  FeedbackBatch out;
  out.remembered = remembered;
  ExampleBatch& batch = out.batch;
  for (int i = 0; i < request.items_size(); ++i) {
    const adapt::v1::FeedbackItem& item = request.items(i);
    // The applied ids first: a resent id applies once, even once its key is forgotten.
    if (context_.durability != nullptr && IdApplied(item.prediction_id())) {
      ++duplicates_;
      continue;
    }
    ASSIGN_OR_RETURN(RememberedPrediction served,
                     remembered->Find(ids[i], now, ItemField(i, "prediction_id")));
    if (batch.rows == 0) batch.dim = static_cast<int64_t>(served.key.size());
    if (static_cast<int64_t>(served.key.size()) != batch.dim) {
      return absl::FailedPreconditionError(absl::StrCat(
          ItemField(i, "prediction_id"), ": served with keys of dimension ", served.key.size(),
          ", another item with ", batch.dim, "; send them in separate calls"));
    }
    batch.keys.insert(batch.keys.end(), served.key.begin(), served.key.end());
    if (labels) {
      const bool confirmed = item.truth_case() != adapt::v1::FeedbackItem::kLabel;
      batch.labels.push_back(confirmed ? served.label : item.label());
      if (confirmed || item.label() == served.label) ++out.served_correct;
      ++out.served_evaluated;
    } else if (item.truth_case() == adapt::v1::FeedbackItem::kVector) {
      batch.targets.insert(batch.targets.end(), item.vector().values().begin(),
                           item.vector().values().end());
    } else {
      batch.targets.insert(batch.targets.end(), served.vector.begin(), served.vector.end());
    }
    out.delay_seconds_sum += absl::ToDoubleSeconds(now - served.served);
    out.ids.push_back(&item.prediction_id());
    ++batch.rows;
  }
  return out;
}

absl::StatusOr<adapt::v1::FeedbackResponse> WriteSession::Feedback(
    const adapt::v1::FeedbackRequest& request) {
  if (request.tenant().empty() || request.store().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(request.tenant().empty() ? "tenant" : "store", ": required"));
  }
  ++messages_;
  RETURN_IF_ERROR(Open(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(FeedbackBatch staged, StageableFeedback(request));
  const int64_t rows = staged.batch.rows;
  if (rows > 0) {
    RETURN_IF_ERROR(context_.quotas->TakeExamples(tenant_, static_cast<uint64_t>(rows)));
    RETURN_IF_ERROR(StageEncoded(std::move(staged.batch), std::move(staged.ids)));
    if (context_.metrics != nullptr) {
      context_.metrics->RecordBatch("Feedback", static_cast<double>(rows));
    }
  }
  ASSIGN_OR_RETURN(adapt::v1::AdaptResponse adapted, Finish());
  adapt::v1::FeedbackResponse response;
  response.set_accepted(adapted.accepted());
  response.set_version(adapted.version());
  response.set_duplicates(adapted.duplicates());
  response.set_evaluated(adapted.evaluated());
  response.set_correct(adapted.correct());
  response.set_served_correct(staged.served_correct);
  staged.remembered->CountServed(staged.served_evaluated, staged.served_correct);
  if (context_.metrics != nullptr) {
    context_.metrics->RecordFeedback(
        tenant_, KindName(store_->spec().kind()), static_cast<double>(rows),
        static_cast<double>(adapted.duplicates()), static_cast<double>(staged.served_evaluated),
        static_cast<double>(staged.served_correct), staged.delay_seconds_sum);
  }
  return response;
}

}  // namespace adaptd
