#include "server/rpc/handoff.h"

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
#include "server/config/config.h"
#include "server/core/status_macros.h"
#include "server/persistence/env.h"
#include "server/persistence/file_util.h"
#include "server/rpc/status.h"

namespace adaptd {
namespace {

constexpr char kStateHeader[] = "adaptd cluster state 1";
constexpr absl::Duration kPollTimeout = absl::Seconds(2);

grpc::Status Unavailable(std::string message) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::move(message));
}

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
                                                         Forwarder* forwarder, Engine* engine,
                                                         const TokenAuthorizer* auth,
                                                         Metrics* metrics) {
  std::string token;
  if (!config.cluster().member_token_file().empty()) {
    ASSIGN_OR_RETURN(token, ReadMemberToken(config.cluster().member_token_file()));
  }
  const std::string state_path =
      config.data_dir().empty() ? "" : absl::StrCat(config.data_dir(), "/cluster.state");
  ASSIGN_OR_RETURN(SavedState saved, ReadState(state_path));
  const absl::Duration interval = absl::Milliseconds(
      config.cluster().handoff_interval_ms() == 0 ? 1000 : config.cluster().handoff_interval_ms());
  const size_t chunk_bytes = std::min<size_t>(size_t{1} << 20, config.max_message_bytes() / 2);
  std::unique_ptr<HandOff> h(new HandOff(forwarder, engine, auth, metrics, state_path,
                                         std::move(token), interval, chunk_bytes));
  absl::StatusOr<cluster::Membership> current = forwarder->membership().Draining(saved.draining);
  if (!current.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(state_path, ": the members it drains leave none: ", current.status().message(),
                     " (edit the file or the member list)"));
  }
  absl::MutexLock lock(&h->mu_);
  h->current_ = std::make_shared<const cluster::Membership>(*std::move(current));
  h->settled_fingerprint_ = saved.settled;
  h->settled_ = saved.settled == FingerprintHex(h->current_->fingerprint());
  if (h->current_->members().size() == 1) h->settled_ = true;  // nobody else to ask
  for (const cluster::Member& m : h->current_->members()) {
    if (m.name != h->self_) h->peers_[m.name];
  }
  return h;
}

HandOff::HandOff(Forwarder* forwarder, Engine* engine, const TokenAuthorizer* auth,
                 Metrics* metrics, std::string state_path, std::string member_token,
                 absl::Duration interval, size_t chunk_bytes)
    : forwarder_(forwarder),
      engine_(engine),
      auth_(auth),
      metrics_(metrics),
      self_(forwarder->membership().self().name),
      state_path_(std::move(state_path)),
      member_token_(std::move(member_token)),
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
    if (in_flight_ != nullptr) in_flight_->TryCancel();  // its store stays here, to resend
  }
  if (thread_.joinable()) thread_.join();
  std::vector<AdminThread> admin;
  {
    absl::MutexLock lock(&admin_mu_);
    admin_closed_ = true;
    admin.swap(admin_);
  }
  for (AdminThread& t : admin) t.thread.join();
}

bool HandOff::stopping() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool HandOff::RunAdmin(std::function<void()> work) {
  absl::MutexLock lock(&admin_mu_);
  if (admin_closed_) return false;
  // Joins the threads that finished (each admin call's thread ends with its call).
  for (auto it = admin_.begin(); it != admin_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = admin_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  admin_.push_back({std::thread([work = std::move(work), done] {
                      work();
                      done->store(true);
                    }),
                    done});
  return true;
}

std::shared_ptr<const cluster::Membership> HandOff::membership() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

bool HandOff::IsMove(const grpc::ServerContextBase& context) const {
  if (context.client_metadata().count(kMoveHeader) == 0 || !Forwarder::IsForwarded(context)) {
    return false;
  }
  if (auth_ == nullptr || !auth_->enabled()) return true;
  absl::StatusOr<const Principal*> principal = auth_->Authenticate(AuthorizationHeader(context));
  return principal.ok() && (*principal)->admin;
}

const cluster::Member* HandOff::Configured(const std::string& name) const {
  return forwarder_->membership().Find(name);
}

grpc::Status HandOff::Route(const grpc::ServerContextBase& context, const std::string& tenant,
                            const std::string& store, Access access,
                            const cluster::Member** to) const {
  *to = nullptr;
  std::shared_ptr<const cluster::Membership> m;
  bool settled = false;
  {
    absl::MutexLock lock(&mu_);
    m = current_;
    settled = settled_;
  }
  const cluster::Member& owner = m->OwnerOf(tenant, store);
  const bool mine = owner.name == self_;
  const bool held = engine_->Holds(tenant, store);
  const std::string key = absl::StrCat(tenant, "/", store);
  if (!mine) {
    if (held) {
      // Moving from here: served until the owner holds it, never changed here.
      if (access == Access::kRead) return grpc::Status::OK;
      return Unavailable(absl::StrCat("store ", key, " is being handed off from member ", self_,
                                      " to its owner ", owner.name, "; retry"));
    }
    if (const std::string from = Forwarder::ForwardedBy(context); !from.empty()) {
      return Unavailable(absl::StrCat(
          "store ", key, " belongs to member ", owner.name, " by the member list of ", self_,
          ", not to this member, to which member ", from,
          " forwarded it: their member lists differ (a change of members in progress); retry"));
    }
    *to = Configured(owner.name);
    return grpc::Status::OK;
  }
  if (settled) return grpc::Status::OK;
  if (access == Access::kCreate && IsMove(context)) return grpc::Status::OK;  // a hand-off
  absl::MutexLock lock(&mu_);
  std::string holder, unconfirmed;
  for (const auto& [name, peer] : peers_) {
    if (peer.moving.contains(key)) holder = name;
    if (unconfirmed.empty() && (!peer.answered || !peer.complete ||
                                peer.fingerprint != FingerprintHex(current_->fingerprint()))) {
      unconfirmed = name;
    }
  }
  if (held) {
    // A copy still on the member that sent it (its acknowledgement was lost): the delete
    // waits until that member has dropped it, or it would come back with the next send.
    if (access == Access::kDelete && !holder.empty()) {
      return Unavailable(absl::StrCat("store ", key, " has a copy on member ", holder,
                                      " still being handed off; retry"));
    }
    return grpc::Status::OK;
  }
  if (!holder.empty()) {
    if (access == Access::kRead && Forwarder::ForwardedBy(context) != holder) {
      *to = Configured(holder);
      return grpc::Status::OK;
    }
    return Unavailable(absl::StrCat("store ", key, " is being handed off from member ", holder,
                                    " to this member, ", self_, "; retry"));
  }
  if (!unconfirmed.empty()) {
    const Peer& p = peers_.at(unconfirmed);
    return Unavailable(absl::StrCat(
        "the member list changed and member ", unconfirmed, " has not confirmed it yet (",
        !p.answered ? (p.error.empty() ? "not asked yet" : p.error)
                    : (p.fingerprint != FingerprintHex(current_->fingerprint())
                           ? absl::StrCat("it routes by list ", p.fingerprint, ", this member by ",
                                          FingerprintHex(current_->fingerprint()))
                           : "its list of the stores it moves is incomplete"),
        "), so this member cannot tell whether store ", key, " is elsewhere; retry"));
  }
  return grpc::Status::OK;
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

absl::Status HandOff::SaveLocked() const {
  if (state_path_.empty()) return absl::OkStatus();
  std::string text = absl::StrCat(kStateHeader, "\n");
  for (const std::string& d : current_->draining()) absl::StrAppend(&text, "draining ", d, "\n");
  if (!settled_fingerprint_.empty()) absl::StrAppend(&text, "settled ", settled_fingerprint_, "\n");
  return WriteFileAtomically(Env::Default(), state_path_, text, /*sync=*/true);
}

absl::Status HandOff::SetDraining(const std::string& member, bool undo) {
  if (Configured(member) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "member: \"", member, "\" is not among the cluster's members (",
        absl::StrJoin(forwarder_->membership().members(), ", ",
                      [](std::string* out, const cluster::Member& m) { out->append(m.name); }),
        ")"));
  }
  absl::MutexLock lock(&mu_);
  std::set<std::string> draining = current_->draining();
  if (undo) {
    draining.erase(member);
  } else {
    draining.insert(member);
  }
  if (draining == current_->draining()) return absl::OkStatus();  // recorded already
  ASSIGN_OR_RETURN(cluster::Membership next, forwarder_->membership().Draining(draining));
  std::shared_ptr<const cluster::Membership> previous = std::move(current_);
  current_ = std::make_shared<const cluster::Membership>(std::move(next));
  if (absl::Status saved = SaveLocked(); !saved.ok()) {
    current_ = std::move(previous);
    return absl::UnavailableError(
        absl::StrCat("the drain could not be recorded: ", saved.message()));
  }
  settled_ = settled_fingerprint_ == FingerprintHex(current_->fingerprint());
  for (auto& [name, peer] : peers_) peer.answered = false;  // ask again under the new list
  unfence_ = true;
  woken_ = true;
  std::fprintf(stderr, "adaptd: cluster: member %s %s; routing by list %s\n", member.c_str(),
               undo ? "owns stores again" : "drains",
               FingerprintHex(current_->fingerprint()).c_str());
  return absl::OkStatus();
}

std::unique_ptr<grpc::ClientContext> HandOff::MemberContext(absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!member_token_.empty()) context->AddMetadata("authorization", "Bearer " + member_token_);
  context->AddMetadata(kForwardedHeader, self_);
  return context;
}

adapt::v1::Adaptation::Stub* HandOff::StubFor(const cluster::Member& member) const {
  absl::MutexLock lock(&stub_mu_);
  std::unique_ptr<adapt::v1::Adaptation::Stub>& stub = stubs_[member.name];
  if (stub == nullptr) stub = adapt::v1::Adaptation::NewStub(forwarder_->ChannelFor(member));
  return stub.get();
}

absl::StatusOr<adapt::v1::MemberStatus> HandOff::AskStatus(const cluster::Member& member,
                                                           absl::Duration timeout) const {
  std::unique_ptr<grpc::ClientContext> context = MemberContext(timeout);
  adapt::v1::ClusterStatusRequest request;
  request.set_local(true);
  adapt::v1::ClusterStatusResponse response;
  const grpc::Status status = StubFor(member)->ClusterStatus(context.get(), request, &response);
  if (!status.ok()) {
    return FromGrpc(status);
  }
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
    std::unique_ptr<grpc::ClientContext> context = MemberContext(timeout);
    adapt::v1::DrainMemberRequest request;
    request.set_member(member);
    request.set_undo(undo);
    request.set_local(true);
    adapt::v1::DrainMemberResponse response;
    const grpc::Status status = StubFor(other)->DrainMember(context.get(), request, &response);
    if (!status.ok()) failed.push_back(absl::StrCat(other.name, " (", status.error_message(), ")"));
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
  absl::MutexLock lock(&mu_);
  if (current_.get() != m.get() || !agreed || settled_) return;  // the list changed meanwhile
  settled_fingerprint_ = fingerprint;
  if (absl::Status saved = SaveLocked(); !saved.ok()) {
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
  std::unique_ptr<grpc::ClientContext> context = MemberContext(timeout);
  context->AddMetadata(kMoveHeader, self_);
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return false;
    in_flight_ = context.get();
  }
  adapt::v1::StoreInfo info;
  std::unique_ptr<grpc::ClientWriter<adapt::v1::StoreChunk>> writer =
      StubFor(owner)->ImportStore(context.get(), &info);
  size_t offset = 0;
  bool first = true;
  while (first || offset < out->file.size()) {
    adapt::v1::StoreChunk chunk;
    if (first) {
      chunk.set_tenant(tenant);
      chunk.set_store(store);
      for (const std::string& id : out->applied_ids) chunk.add_applied_ids(id);
    }
    const size_t n = std::min(chunk_bytes_, out->file.size() - offset);
    chunk.set_data(out->file.substr(offset, n));
    offset += n;
    first = false;
    if (!writer->Write(chunk)) break;  // the call ended: Finish says why
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = nullptr;
  }
  // ALREADY_EXISTS: an earlier send arrived and only its answer was lost. No other store of
  // this name can be there: the owner creates none while this member lists it as moving.
  if (!status.ok() && status.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
    std::fprintf(stderr, "adaptd: cluster: hand-off of %s to %s failed (will retry): %s\n",
                 key.c_str(), owner.name.c_str(), status.error_message().c_str());
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
