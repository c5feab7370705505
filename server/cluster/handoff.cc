#include "server/cluster/handoff.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/auth/grpc_auth.h"
#include "server/auth/sha256.h"
#include "server/base/grpc_status.h"
#include "server/base/status_macros.h"
#include "server/config/config.h"
#include "server/config/defaults.h"
#include "server/persistence/env.h"
#include "server/persistence/file_util.h"

namespace adaptd {
namespace {

constexpr char kStateHeader[] = "adaptd cluster state 1";
constexpr absl::Duration kPollTimeout = absl::Seconds(2);

}  // namespace

absl::StatusOr<std::string> ReadMemberToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.member_token_file ", path, ": cannot be read"));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(bytes.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.member_token_file ", path, ": the file is empty"));
  }
  return token;
}

absl::Status AddMemberToken(const adapt::v1::ServerConfig& config,
                            google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>* tokens) {
  if (!config.has_cluster() || tokens->empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string member_token, ReadMemberToken(config.cluster().member_token_file()));
  adapt::v1::TokenConfig* member = tokens->Add();
  member->set_sha256(Sha256Hex(member_token));
  member->set_admin(true);
  member->set_name("cluster member");
  return absl::OkStatus();
}

cluster::CallOrigin CallOriginOf(const grpc::ServerContextBase& context) {
  cluster::CallOrigin origin;
  const auto& metadata = context.client_metadata();
  if (const auto from = metadata.find(kForwardedHeader); from != metadata.end()) {
    origin.forwarded = true;
    origin.forwarded_by.assign(from->second.data(), from->second.size());
  }
  origin.move_marked = metadata.count(kMoveHeader) > 0;
  return origin;
}

namespace {

struct SavedState {
  std::set<std::string> draining;
  std::string settled;  // the fingerprint last seen settled
};

absl::StatusOr<SavedState> ReadState(const std::string& path) {
  SavedState state;
  if (path.empty()) return state;
  std::ifstream in(path);
  if (!in) return state;  // never written: nothing drained, not settled
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      if (line != kStateHeader) {
        return absl::DataLossError(
            absl::StrCat(path, ": not a cluster state file (line 1 is \"", line, "\")"));
      }
      continue;
    }
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.empty()) continue;
    if (words.size() == 2 && words[0] == "draining") {
      state.draining.insert(words[1]);
    } else if (words.size() == 2 && words[0] == "settled") {
      state.settled = words[1];
    } else {
      return absl::DataLossError(absl::StrCat(path, ": line ", number, " (\"", line,
                                              "\") is not \"draining NAME\" or \"settled HEX\""));
    }
  }
  return state;
}

}  // namespace

std::string FingerprintHex(uint64_t fingerprint) { return absl::StrFormat("%016x", fingerprint); }

absl::StatusOr<std::unique_ptr<HandOff>> HandOff::Create(const adapt::v1::ServerConfig& config,
                                                         Forwarder* forwarder, MemberCalls* calls,
                                                         Engine* engine,
                                                         const TokenAuthorizer* auth,
                                                         Metrics* metrics) {
  const std::string state_path =
      config.data_dir().empty() ? "" : absl::StrCat(config.data_dir(), "/cluster.state");
  ASSIGN_OR_RETURN(SavedState saved, ReadState(state_path));
  const absl::Duration interval = absl::Milliseconds(config.cluster().handoff_interval_ms() == 0
                                                         ? defaults::kHandoffIntervalMs
                                                         : config.cluster().handoff_interval_ms());
  const size_t chunk_bytes = std::min<size_t>(size_t{1} << 20, config.max_message_bytes() / 2);
  std::unique_ptr<HandOff> h(
      new HandOff(forwarder, calls, engine, auth, metrics, state_path, interval, chunk_bytes));
  absl::StatusOr<std::unique_ptr<cluster::StaticMembership>> members =
      cluster::StaticMembership::Create(forwarder->membership(), saved.draining);
  if (!members.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(state_path, ": the members it drains leave none: ", members.status().message(),
                     " (edit the file or the member list)"));
  }
  h->members_ = *std::move(members);
  {
    absl::MutexLock lock(&h->mu_);
    h->current_ = h->members_->Current();
    h->settled_fingerprint_ = saved.settled;
    h->settled_ = saved.settled == FingerprintHex(h->current_->fingerprint());
    if (h->current_->members().size() == 1) h->settled_ = true;  // nobody else to ask
    for (const cluster::Member& m : h->current_->members()) {
      if (m.name != h->self_) h->peers_[m.name];
    }
  }
  HandOff* const handoff = h.get();
  h->watch_ = h->members_->Watch(
      [handoff](std::shared_ptr<const cluster::Membership> next) { handoff->Changed(next); });
  return h;
}

HandOff::HandOff(Forwarder* forwarder, MemberCalls* calls, Engine* engine,
                 const TokenAuthorizer* auth, Metrics* metrics, std::string state_path,
                 absl::Duration interval, size_t chunk_bytes)
    : forwarder_(forwarder),
      calls_(calls),
      engine_(engine),
      auth_(auth),
      metrics_(metrics),
      self_(forwarder->membership().self().name),
      state_path_(std::move(state_path)),
      interval_(interval),
      chunk_bytes_(chunk_bytes) {}

HandOff::~HandOff() { Stop(); }

void HandOff::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void HandOff::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (in_flight_ != nullptr) in_flight_->Cancel();  // its store stays here, to resend
  }
  if (thread_.joinable()) thread_.join();
  admin_.Close();
}

bool HandOff::stopping() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool HandOff::RunAdmin(std::function<void()> work) { return admin_.Run(std::move(work)); }

std::shared_ptr<const cluster::Membership> HandOff::membership() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

bool HandOff::IsMove(bool forwarded, bool move_marked,
                     std::optional<absl::string_view> authorization) const {
  if (!move_marked || !forwarded) return false;
  if (auth_ == nullptr || !auth_->enabled()) return true;
  absl::StatusOr<const Principal*> principal = auth_->Authenticate(authorization);
  return principal.ok() && (*principal)->admin;
}

const cluster::Member* HandOff::Configured(const std::string& name) const {
  return forwarder_->membership().Find(name);
}

absl::Status HandOff::Route(const cluster::CallOrigin& origin, const std::string& tenant,
                            const std::string& store, Access access,
                            const cluster::Member** to) const {
  *to = nullptr;
  std::shared_ptr<const cluster::Membership> m;
  cluster::RouteFacts facts;
  {
    absl::MutexLock lock(&mu_);
    m = current_;
    facts.settled = settled_;
  }
  facts.owner = m->OwnerOf(tenant, store).name;
  facts.self = self_;
  facts.held = engine_->Holds(tenant, store);
  facts.key = absl::StrCat(tenant, "/", store);
  facts.access = access;
  facts.origin = origin;
  facts.valid_until = members_->ValidUntil();
  facts.now = absl::Now();
  absl::StatusOr<std::string> decided;
  if (!cluster::RouteNeedsPeers(facts)) {
    decided = cluster::DecideRoute(facts, {});
  } else {
    absl::MutexLock lock(&mu_);
    facts.fingerprint = FingerprintHex(current_->fingerprint());
    decided = cluster::DecideRoute(facts, peers_);
  }
  if (!decided.ok()) return decided.status();
  if (!decided->empty()) *to = Configured(*decided);
  return absl::OkStatus();
}

adapt::v1::MemberStatus HandOff::LocalStatus(size_t max_moving) const {
  std::shared_ptr<const cluster::Membership> m = membership();
  adapt::v1::MemberStatus out;
  out.set_name(self_);
  out.set_address(m->self().address);
  out.set_fingerprint(FingerprintHex(m->fingerprint()));
  for (const std::string& d : m->draining()) out.add_draining(d);
  uint64_t held = 0, moving = 0;
  const std::vector<std::pair<std::string, std::string>> names =
      engine_->HeldStores([&](const std::string& tenant, const std::string& store) {
        ++held;
        if (m->OwnsStore(tenant, store)) return false;
        ++moving;
        return true;
      });
  out.set_stores(held);
  out.set_moving_count(moving);
  for (size_t i = 0; i < names.size() && i < max_moving; ++i) {
    out.add_moving(absl::StrCat(names[i].first, "/", names[i].second));
  }
  absl::MutexLock lock(&mu_);
  out.set_settled(settled_ && moving == 0);
  out.set_moved_out(moved_out_);
  return out;
}

absl::Status HandOff::Save(const std::set<std::string>& draining,
                           const std::string& settled) const {
  if (state_path_.empty()) return absl::OkStatus();
  std::string text = absl::StrCat(kStateHeader, "\n");
  for (const std::string& d : draining) absl::StrAppend(&text, "draining ", d, "\n");
  if (!settled.empty()) absl::StrAppend(&text, "settled ", settled, "\n");
  return WriteFileAtomically(Env::Default(), state_path_, text, /*sync=*/true);
}

absl::Status HandOff::SetDraining(const std::string& member, bool undo) {
  absl::MutexLock file(&state_file_mu_);
  bool changed = false;
  RETURN_IF_ERROR(members_->SetDraining(member, !undo, [&](const cluster::Membership& next) {
    state_file_mu_.AssertHeld();  // runs within members_->SetDraining, under the lock above
    std::string settled;
    {
      absl::MutexLock lock(&mu_);
      settled = settled_fingerprint_;
    }
    if (absl::Status saved = Save(next.draining(), settled); !saved.ok()) {
      return absl::UnavailableError(
          absl::StrCat("the drain could not be recorded: ", saved.message()));
    }
    changed = true;
    return absl::OkStatus();
  }));
  if (!changed) return absl::OkStatus();  // recorded already
  std::fprintf(stderr, "adaptd: cluster: member %s %s; routing by list %s\n", member.c_str(),
               undo ? "owns stores again" : "drains",
               FingerprintHex(membership()->fingerprint()).c_str());
  return absl::OkStatus();
}

void HandOff::Changed(std::shared_ptr<const cluster::Membership> next) {
  absl::MutexLock lock(&mu_);
  if (next == current_) return;  // the one current when the HandOff began watching
  current_ = std::move(next);
  settled_ = settled_fingerprint_ == FingerprintHex(current_->fingerprint());
  for (auto& [name, peer] : peers_) peer.answered = false;  // ask again under the new list
  unfence_ = true;
  woken_ = true;
}

absl::StatusOr<adapt::v1::MemberStatus> HandOff::AskStatus(const cluster::Member& member,
                                                           absl::Duration timeout) const {
  adapt::v1::ClusterStatusRequest request;
  request.set_local(true);
  adapt::v1::ClusterStatusResponse response;
  RETURN_IF_ERROR(calls_->ClusterStatus(member, request, &response, timeout));
  if (response.members_size() != 1 || response.members(0).name() != member.name) {
    return absl::InternalError(
        absl::StrCat("member ", member.name, " answered for ",
                     response.members_size() == 1 ? response.members(0).name() : "no one single",
                     ": its --cluster-self differs from the name in this member's list"));
  }
  return response.members(0);
}

adapt::v1::ClusterStatusResponse HandOff::Gather(absl::Duration timeout) const {
  adapt::v1::ClusterStatusResponse out;
  std::shared_ptr<const cluster::Membership> m = membership();
  const std::string fingerprint = FingerprintHex(m->fingerprint());
  bool settled = true;
  for (const cluster::Member& member : forwarder_->membership().members()) {
    adapt::v1::MemberStatus* status = out.add_members();
    if (member.name == self_) {
      *status = LocalStatus(1000);
    } else if (absl::StatusOr<adapt::v1::MemberStatus> got = AskStatus(member, timeout); got.ok()) {
      *status = *std::move(got);
      if (status->moving_size() > 1000)
        status->mutable_moving()->DeleteSubrange(1000, status->moving_size() - 1000);
    } else {
      status->set_name(member.name);
      status->set_address(member.address);
      status->set_error(std::string(got.status().message()));
      settled = false;
      continue;
    }
    out.set_moves_in_flight(out.moves_in_flight() + status->moving_count());
    if (status->fingerprint() != fingerprint || status->moving_count() > 0 || !status->settled()) {
      settled = false;
    }
  }
  out.set_settled(settled);
  return out;
}

absl::Status HandOff::DrainEverywhere(const std::string& member, bool undo,
                                      absl::Duration timeout) {
  RETURN_IF_ERROR(SetDraining(member, undo));
  std::vector<std::string> failed;
  for (const cluster::Member& other : forwarder_->membership().members()) {
    if (other.name == self_) continue;
    adapt::v1::DrainMemberRequest request;
    request.set_member(member);
    request.set_undo(undo);
    request.set_local(true);
    adapt::v1::DrainMemberResponse response;
    const absl::Status status = calls_->DrainMember(other, request, &response, timeout);
    if (!status.ok()) failed.push_back(absl::StrCat(other.name, " (", status.message(), ")"));
  }
  if (!failed.empty()) {
    return absl::UnavailableError(
        absl::StrCat("the drain of ", member, " is recorded on this member but not on ",
                     absl::StrJoin(failed, ", "), "; run it again once they answer"));
  }
  return absl::OkStatus();
}

void HandOff::Poll(size_t moving_here) {
  std::shared_ptr<const cluster::Membership> m = membership();
  const std::string fingerprint = FingerprintHex(m->fingerprint());
  bool agreed = moving_here == 0;
  for (const cluster::Member& member : m->members()) {
    if (member.name == self_) continue;
    absl::StatusOr<adapt::v1::MemberStatus> got = AskStatus(member, kPollTimeout);
    absl::MutexLock lock(&mu_);
    Peer& peer = peers_[member.name];
    if (!got.ok()) {
      peer.answered = false;  // its moving list stays as last seen
      peer.error = absl::StrCat("it does not answer: ", got.status().message());
      agreed = false;
      continue;
    }
    peer.answered = true;
    peer.error.clear();
    peer.fingerprint = got->fingerprint();
    peer.moving.clear();
    for (const std::string& name : got->moving()) peer.moving.insert(name);
    peer.complete = static_cast<uint64_t>(got->moving_size()) == got->moving_count();
    if (peer.fingerprint != fingerprint || got->moving_count() > 0) agreed = false;
  }
  absl::MutexLock file(&state_file_mu_);
  absl::MutexLock lock(&mu_);
  if (current_.get() != m.get() || !agreed || settled_) return;  // the list changed meanwhile
  settled_fingerprint_ = fingerprint;
  if (absl::Status saved = Save(current_->draining(), settled_fingerprint_); !saved.ok()) {
    std::fprintf(stderr, "adaptd: cluster: could not record the settled list: %s\n",
                 std::string(saved.message()).c_str());
  }
  settled_ = true;
  std::fprintf(stderr, "adaptd: cluster: settled on list %s (every store on its owner)\n",
               fingerprint.c_str());
}

bool HandOff::MoveOne(const std::string& tenant, const std::string& store,
                      const cluster::Member& owner) {
  const std::string key = absl::StrCat(tenant, "/", store);
  absl::StatusOr<Engine::Outgoing> out = engine_->ExportForMove(tenant, store);
  if (!out.ok()) {
    if (absl::IsNotFound(out.status())) return true;  // deleted meanwhile
    std::fprintf(stderr, "adaptd: cluster: cannot hand %s off to %s: %s\n", key.c_str(),
                 owner.name.c_str(), std::string(out.status().message()).c_str());
    if (metrics_ != nullptr) metrics_->RecordMove("failed");
    return false;
  }
  // Generous: the owner writes the state durably before it answers.
  const absl::Duration timeout =
      absl::Seconds(30) + absl::Seconds(static_cast<double>(out->file.size()) / (8 << 20));
  std::unique_ptr<MemberCalls::Send> send =
      calls_->PrepareSend(owner, tenant, store, out->applied_ids, out->file, chunk_bytes_, timeout);
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return false;
    in_flight_ = send.get();
  }
  const absl::Status status = send->Run();
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = nullptr;
  }
  // ALREADY_EXISTS: an earlier send arrived and only its answer was lost. No other store of
  // this name can be there: the owner creates none while this member lists it as moving.
  if (!status.ok() && !absl::IsAlreadyExists(status)) {
    std::fprintf(stderr, "adaptd: cluster: hand-off of %s to %s failed (will retry): %s\n",
                 key.c_str(), owner.name.c_str(), std::string(status.message()).c_str());
    if (metrics_ != nullptr) metrics_->RecordMove("failed");
    return false;
  }
  if (absl::Status dropped = engine_->DropMoved(tenant, store);
      !dropped.ok() && !absl::IsNotFound(dropped)) {
    std::fprintf(stderr, "adaptd: cluster: %s is on %s, but its copy here stays: %s\n", key.c_str(),
                 owner.name.c_str(), std::string(dropped.message()).c_str());
    if (metrics_ != nullptr) metrics_->RecordMove("failed");
    return false;
  }
  if (metrics_ != nullptr) metrics_->RecordMove("moved");
  absl::MutexLock lock(&mu_);
  ++moved_out_;
  return true;
}

void HandOff::Loop() {
  while (true) {
    std::shared_ptr<const cluster::Membership> m;
    bool settled = false, unfence = false;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      m = current_;
      settled = settled_;
      unfence = std::exchange(unfence_, false);
    }
    if (unfence) {
      // A drain undone: the stores this member owns again take changes again.
      for (const auto& [tenant, store] : engine_->HeldStores()) {
        if (m->OwnsStore(tenant, store)) engine_->Unfence(tenant, store);
      }
    }
    const std::vector<std::pair<std::string, std::string>> outgoing =
        engine_->HeldStores([&](const std::string& tenant, const std::string& store) {
          return !m->OwnsStore(tenant, store);
        });
    if (!settled || !outgoing.empty()) Poll(outgoing.size());
    size_t moved = 0, tried = 0;
    for (const auto& [tenant, store] : outgoing) {
      const cluster::Member& owner = m->OwnerOf(tenant, store);
      {
        absl::MutexLock lock(&mu_);
        if (stop_ || current_ != m) break;
        // Only to an owner that routes by the same list (else it would not take the store).
        const Peer& peer = peers_[owner.name];
        if (!peer.answered || peer.fingerprint != FingerprintHex(m->fingerprint())) continue;
      }
      ++tried;
      if (MoveOne(tenant, store, owner)) ++moved;
    }
    if (metrics_ != nullptr) {
      absl::MutexLock lock(&mu_);
      metrics_->SetHandOff(static_cast<double>(outgoing.size() - moved), settled_);
    }
    absl::MutexLock lock(&mu_);
    if (moved > 0 && moved == tried) continue;  // more may be due at once (a list change)
    const auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || woken_; };
    mu_.AwaitWithTimeout(absl::Condition(&wake), interval_);
    woken_ = false;
  }
}

}  // namespace adaptd
