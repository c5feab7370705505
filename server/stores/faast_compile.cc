// FaastStore's compiles: staging (the input taken from the store under its lock, the solve
// outside it), publication or roll-back of a staged compile, and replay's noted compiles, solved
// once (docs/DURABILITY.md, "Compiles"). The rest of the store is faast_store.cc.
#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/stores/faast_compile_internal.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_solver.h"
#include "server/stores/faast_store.h"

namespace adaptd {

using adapt::v1::CompileRequest;
using adapt::v1::CompileResponse;

namespace {

// A compile's FaastStats, less the examples still pending when it is published.
adapt::v1::FaastStats CompileStats(const FaastSolution& solution, double compiled_examples,
                                   double seconds, double share, uint64_t base_version) {
  adapt::v1::FaastStats stats;
  stats.set_compiled_examples(compiled_examples);
  stats.set_effective_rank(solution.effective_rank);
  stats.set_cutoff(solution.cutoff);
  stats.set_condition_number(solution.condition_number);
  stats.set_solver(solution.solver);
  stats.set_compile_seconds(seconds);
  stats.set_fast_weight_share(share);
  stats.set_base_version(base_version);
  return stats;
}

// The read-out before any example: S = 0, which the interpolation turns into the identity.
FaastSolution ZeroShotSolution(int64_t dim, int64_t columns) {
  FaastSolution out;
  out.s.assign(static_cast<size_t>(dim * columns), 0.0);
  out.solver = "zero_shot";
  return out;
}

}  // namespace

// A solved compile. Staged (store_ set) until published; dropped before, it rolls back.
class FaastStore::Staged final : public StagedCompile {
 public:
  ~Staged() override {
    if (store_ != nullptr) store_->Abandon(*this);
  }

  FaastStore* store_ = nullptr;
  std::shared_ptr<FaastWeights> weights;
  adapt::v1::FaastParams params;
  adapt::v1::FaastStats stats;
  std::optional<uint64_t> version;  // unset: the next version
  uint64_t taken = 0;
  PriorBackup prior;
};

absl::StatusOr<CompileResponse> FaastStore::Compile(const CompileRequest& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<StagedCompile> staged, SolveCompile(request, nullptr));
  return PublishCompile(std::move(staged));
}

absl::StatusOr<CompileResponse> FaastStore::CompileWithBase(const CompileRequest& request,
                                                            const BaseReadout& base) {
  ASSIGN_OR_RETURN(std::unique_ptr<StagedCompile> staged, SolveCompile(request, &base));
  return PublishCompile(std::move(staged));
}

absl::StatusOr<std::unique_ptr<StagedCompile>> FaastStore::SolveCompile(
    const CompileRequest& request, const BaseReadout* base) {
  RETURN_IF_ERROR(ValidateFaastOverrides(request.faast()));
  ASSIGN_OR_RETURN(std::unique_ptr<Staged> staged, Stage(request.faast(), std::nullopt, base));
  return std::unique_ptr<StagedCompile>(std::move(staged));
}

absl::StatusOr<CompileResponse> FaastStore::PublishCompile(std::unique_ptr<StagedCompile> staged) {
  auto* mine = dynamic_cast<Staged*>(staged.get());
  if (mine == nullptr || mine->store_ != this) {
    return absl::InvalidArgumentError("the staged compile belongs to another store");
  }
  staged.release();
  return Publish(std::unique_ptr<Staged>(mine));
}

bool FaastStore::ChangedSinceCompile() const {
  absl::MutexLock lock(&mu_);
  return pending_ > 0;
}

absl::StatusOr<CompileResponse> FaastStore::CompileAndPublish(
    const adapt::v1::FaastParams& overrides, std::optional<uint64_t> fixed_version) {
  ASSIGN_OR_RETURN(std::unique_ptr<Staged> staged, Stage(overrides, fixed_version, nullptr));
  return Publish(std::move(staged));
}

absl::StatusOr<std::unique_ptr<FaastStore::Staged>> FaastStore::Stage(
    const adapt::v1::FaastParams& overrides, std::optional<uint64_t> fixed_version,
    const BaseReadout* base) {
  compile_mu_.LockWhen(absl::Condition(
      +[](bool* staged) { return !*staged; }, &staged_));
  absl::StatusOr<std::unique_ptr<Staged>> staged = StageLocked(overrides, fixed_version, base);
  if (staged.ok()) {
    (*staged)->store_ = this;
    staged_ = true;
  }
  compile_mu_.Unlock();
  return staged;
}

absl::StatusOr<std::unique_ptr<FaastStore::Staged>> FaastStore::StageLocked(
    const adapt::v1::FaastParams& overrides, std::optional<uint64_t> fixed_version,
    const BaseReadout* base) {
  auto staged = std::make_unique<Staged>();
  staged->version = fixed_version;
  CompileInput in;
  {
    absl::MutexLock lock(&mu_);
    if (base != nullptr) RETURN_IF_ERROR(ReplacePriorLocked(*base, &staged->prior));
    if (absl::Status taken = TakeCompileInputLocked(overrides, fixed_version, &in); !taken.ok()) {
      RollBackLocked(0, staged->prior);
      return taken;
    }
  }
  staged->taken = in.taken;
  if (absl::Status solved = SolveInput(std::move(in), staged.get()); !solved.ok()) {
    absl::MutexLock lock(&mu_);
    RollBackLocked(staged->taken, staged->prior);
    return solved;
  }
  return staged;
}

CompileResponse FaastStore::Publish(std::unique_ptr<Staged> staged) {
  absl::MutexLock compile_lock(&compile_mu_);
  staged->store_ = nullptr;  // published: nothing to roll back
  staged_ = false;
  return PublishCompiled(std::move(staged->weights), staged->params, std::move(staged->stats),
                         staged->version);
}

void FaastStore::Abandon(const Staged& staged) {
  absl::MutexLock compile_lock(&compile_mu_);
  {
    absl::MutexLock lock(&mu_);
    RollBackLocked(staged.taken, staged.prior);
  }
  staged_ = false;
}

void FaastStore::RollBackLocked(uint64_t taken, const PriorBackup& prior) {
  pending_ += taken;
  compiling_ = 0;
  if (!prior.replaced) return;
  // Labels the base brought stay (a label is never removed), with a zero prior.
  stats_.prior_t.assign(stats_.columns * stats_.dim, 0.0);
  std::copy(prior.prior_t.begin(), prior.prior_t.end(), stats_.prior_t.begin());
  stats_.prior_version = prior.version;
}

absl::Status FaastStore::ReplacePriorLocked(const BaseReadout& base, PriorBackup* backup) {
  if (!stats_.has_prior())
    return absl::FailedPreconditionError("refresh_base: the store has no base");
  backup->prior_t = stats_.prior_t;
  backup->version = stats_.prior_version;
  RETURN_IF_ERROR(SetPriorLocked(base));
  backup->replaced = true;
  return absl::OkStatus();
}

absl::Status FaastStore::SolveInput(CompileInput in, Staged* out) const {
  const double compiled_examples = in.problem.weighted_examples;
  const int64_t dim = in.problem.dim, columns = in.problem.columns;
  const absl::Time start = absl::Now();
  solves_.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<FaastSolution> solution =
      in.zero_shot ? ZeroShotSolution(dim, columns)
                   : SolveFaast(std::move(in.problem), SolverParamsOf(in.params), backend_);
  if (!solution.ok()) return solution.status();
  // The interpolation with the zero-shot read-out (keys and label embeddings of one width).
  double share = 1.0;
  if (prior_examples_ > 0 && dim == columns) {
    share = compiled_examples / (prior_examples_ + compiled_examples);
    for (double& v : solution->s) v *= share;
    for (int64_t i = 0; i < dim; ++i) solution->s[i * columns + i] += 1.0 - share;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  auto weights = std::make_shared<FaastWeights>();
  weights->labels = labels_;
  weights->dim = dim;
  weights->columns = columns;
  weights->s = std::move(solution->s);
  weights->float_scoring = FitsFloat(weights->s);
  if (labels_) weights->label_names = in.names;
  weights->label_vectors = std::move(in.label_vectors);
  out->weights = std::move(weights);
  out->params = std::move(in.params);
  out->stats = CompileStats(*solution, compiled_examples, seconds, share, in.base_version);
  return absl::OkStatus();
}

absl::Status FaastStore::NoteReplayedCompile(const CompileRequest& request,
                                             const BaseReadout* base) {
  RETURN_IF_ERROR(ValidateFaastOverrides(request.faast()));
  absl::MutexLock compile_lock(&compile_mu_);
  absl::MutexLock lock(&mu_);
  const uint64_t version = replayed_ != nullptr ? replayed_->version : this->version();
  PriorBackup prior;
  if (base != nullptr) RETURN_IF_ERROR(ReplacePriorLocked(*base, &prior));
  auto next = std::make_unique<ReplayedCompile>();
  if (absl::Status checked = CompileParamsLocked(request.faast(), version, false, &next->in);
      !checked.ok()) {
    RollBackLocked(0, prior);
    return checked;
  }
  next->version = version + 1;
  // As the compile's publication left them: its parameters persist, nothing is pending.
  *spec_.mutable_faast() = next->in.params;
  pending_ = 0;
  compiling_ = 0;
  replayed_ = std::move(next);
  replay_noted_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void FaastStore::SolveNotedCompileBeforeEvaluating() {
  // Its error leaves the previous version, as a compile that failed when it ran.
  if (replay_noted_.load(std::memory_order_acquire)) (void)SolveReplayedCompile();
}

absl::Status FaastStore::SolveReplayedCompile() {
  absl::MutexLock compile_lock(&compile_mu_);
  std::unique_ptr<ReplayedCompile> replayed;
  {
    absl::MutexLock lock(&mu_);
    if (replayed_ == nullptr) return absl::OkStatus();
    replayed = std::move(replayed_);
    replay_noted_.store(false, std::memory_order_release);
    if (!replayed->has_problem) CopyProblemLocked(&replayed->in);
  }
  Staged solved;  // never staged: nothing to roll back
  RETURN_IF_ERROR(SolveInput(std::move(replayed->in), &solved));
  PublishCompiled(std::move(solved.weights), solved.params, std::move(solved.stats),
                  replayed->version);
  return absl::OkStatus();
}

absl::Status FaastStore::TakeCompileInputLocked(const adapt::v1::FaastParams& overrides,
                                                std::optional<uint64_t> fixed_version,
                                                CompileInput* in) {
  RETURN_IF_ERROR(CompileParamsLocked(overrides, version(), fixed_version.has_value(), in));
  CopyProblemLocked(in);
  in->taken = pending_;
  pending_ = 0;
  compiling_ = in->taken;
  return absl::OkStatus();
}

absl::Status FaastStore::CompileParamsLocked(const adapt::v1::FaastParams& overrides,
                                             uint64_t version, bool fixed_version,
                                             CompileInput* in) const {
  in->zero_shot = prior_examples_ > 0 && stats_.examples == 0 && !label_names_->empty();
  if (stats_.examples == 0 && version == 0 && !fixed_version && !in->zero_shot &&
      !stats_.has_prior()) {
    return absl::FailedPreconditionError("the store holds no examples: adapt some examples first");
  }
  in->params = spec_.faast();
  ApplyFaastOverrides(overrides, &in->params);
  if (stats_.has_prior() && !(in->params.ridge() > 0)) {
    return absl::InvalidArgumentError(
        "faast.ridge: a store with a base solves S = (G + ridge·I)⁻¹(C + ridge·S_base); ridge "
        "must stay > 0");
  }
  in->base_version = stats_.prior_version;
  in->names = label_names_;
  if (embedded_) {
    in->label_vectors = std::make_shared<const std::vector<double>>(
        UnitRows(label_vectors_.data(), static_cast<int64_t>(in->names->size()), out_dim_));
  }
  return absl::OkStatus();
}

void FaastStore::CopyProblemLocked(CompileInput* in) const {
  FaastStatistics& problem = in->problem;
  if (stats_.has_prior()) problem.prior_t = stats_.prior_t;
  problem.prior_version = stats_.prior_version;
  problem.labels = stats_.labels;
  problem.dim = stats_.dim;
  problem.columns = stats_.columns;
  problem.weighted_examples = stats_.weighted_examples;
  problem.examples = stats_.examples;
  problem.raw_kept = stats_.raw_kept && stats_.raw.rows > 0;
  if (problem.raw_kept) {
    problem.raw = stats_.raw;
  } else {
    problem.g = stats_.g;
    problem.ct = stats_.ct;
  }
}

CompileResponse FaastStore::PublishCompiled(std::shared_ptr<FaastWeights> weights,
                                            const adapt::v1::FaastParams& params,
                                            adapt::v1::FaastStats stats,
                                            std::optional<uint64_t> fixed_version) {
  CompileResponse response;
  absl::MutexLock lock(&mu_);
  *spec_.mutable_faast() = params;
  {
    absl::MutexLock pub_lock(&pub_mu_);
    weights->version =
        fixed_version.value_or((published_ == nullptr ? 0 : published_->version) + 1);
    published_ = std::move(weights);
    response.set_version(published_->version);
  }
  last_stats_ = stats;
  compiling_ = 0;
  stats.set_pending_examples(pending_);
  *response.mutable_faast() = std::move(stats);
  return response;
}

}  // namespace adaptd
