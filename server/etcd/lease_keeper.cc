// LeaseKeeper: one thread sends a keep-alive every third of the TTL over a LeaseKeepAlive
// stream, and a reader thread per stream takes etcd's answers. The answers come in the order
// the keep-alives went, so each is matched with the send time of the oldest unanswered one:
// ValidUntil is that send time plus the TTL in the answer (etcd counts the TTL from when it
// renews, which is after the send). A stream that breaks, or leaves a keep-alive unanswered
// for a third of the TTL, is given up for one on the next endpoint.
#include <algorithm>
#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/etcd/etcd_client.h"
#include "server/etcd/etcd_client_impl.h"

namespace adaptd::etcd {

using KeepAliveStream = grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                                 etcdserverpb::LeaseKeepAliveResponse>;

struct LeaseKeeper::Impl {
  EtcdClient* owner = nullptr;
  EtcdConnection* client = nullptr;
  int64_t id = 0;
  absl::Duration ttl;
  std::function<void()> on_lost;

  mutable absl::Mutex mu;
  absl::Time valid_until ABSL_GUARDED_BY(mu);
  bool expired ABSL_GUARDED_BY(mu) = false;  // etcd answered that the lease is gone
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool stream_broken ABSL_GUARDED_BY(mu) = false;
  std::deque<absl::Time> unanswered ABSL_GUARDED_BY(mu);       // send times, oldest first
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;  // the open stream's
  std::thread thread;

  void Run();
  // Keeps the lease over one stream at `endpoint` until it breaks or the keeper stops; false
  // when the keeper is done (stopping, or the lease lost).
  bool KeepOver(size_t endpoint);
  void Read(KeepAliveStream* stream);
  absl::Time ValidUntil() const ABSL_LOCKS_EXCLUDED(mu) {
    absl::MutexLock lock(&mu);
    return valid_until;
  }
  bool Stopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping; }
  bool Interrupted() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return stopping || expired || stream_broken;
  }
  bool LostLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return expired || absl::Now() >= valid_until;
  }
  void Stop();
};

void LeaseKeeper::Impl::Read(KeepAliveStream* stream) {
  etcdserverpb::LeaseKeepAliveResponse response;
  while (stream->Read(&response)) {
    absl::MutexLock lock(&mu);
    if (unanswered.empty()) continue;
    const absl::Time sent = unanswered.front();
    unanswered.pop_front();
    if (response.ttl() <= 0) {
      expired = true;
      break;
    }
    valid_until = std::max(valid_until, sent + absl::Seconds(response.ttl()));
  }
  absl::MutexLock lock(&mu);
  stream_broken = true;
}

bool LeaseKeeper::Impl::KeepOver(size_t endpoint) {
  grpc::ClientContext stream_context;
  std::unique_ptr<KeepAliveStream> stream;
  {
    absl::MutexLock lock(&mu);
    if (stopping) return false;
    context = &stream_context;
    stream_broken = false;
    unanswered.clear();
  }
  // Only over a connected channel: opening a stream waits for the connection, and a member
  // that accepts TCP but does not answer (stopped) would hold the keeper there.
  if (!client->Connected(endpoint, std::min(absl::Now() + ttl / 3, ValidUntil()))) {
    absl::MutexLock lock(&mu);
    context = nullptr;
    mu.AwaitWithTimeout(absl::Condition(this, &Impl::Stopping), absl::Milliseconds(100));
    return !stopping && !LostLocked();
  }
  stream = client->endpoints[endpoint].lease->LeaseKeepAlive(&stream_context);
  std::thread reader([this, &stream] { Read(stream.get()); });
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  const absl::Duration interval = ttl / 3;
  for (;;) {
    {
      absl::MutexLock lock(&mu);
      if (stopping || LostLocked()) break;
      if (stream_broken) break;
      // A keep-alive a third of the TTL old with no answer: this member is not serving it.
      if (!unanswered.empty() && absl::Now() - unanswered.front() >= interval) break;
      unanswered.push_back(absl::Now());
    }
    if (!stream->Write(request)) break;
    absl::MutexLock lock(&mu);
    const absl::Time wake = std::min(absl::Now() + interval, valid_until);
    mu.AwaitWithDeadline(absl::Condition(this, &Impl::Interrupted), wake);
  }
  stream_context.TryCancel();
  reader.join();
  stream->Finish();
  absl::MutexLock lock(&mu);
  context = nullptr;
  return !stopping && !LostLocked();
}

void LeaseKeeper::Impl::Run() {
  size_t endpoint = client->Current();
  while (KeepOver(endpoint)) {
    client->Failed(endpoint);
    endpoint = (endpoint + 1) % client->endpoints.size();
  }
  bool lost = false;
  {
    absl::MutexLock lock(&mu);
    lost = !stopping && LostLocked();
  }
  if (lost && on_lost) on_lost();
}

void LeaseKeeper::Impl::Stop() {
  {
    absl::MutexLock lock(&mu);
    stopping = true;
    if (context != nullptr) context->TryCancel();
  }
  if (thread.joinable()) thread.join();
}

absl::StatusOr<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Start(EtcdClient* client,
                                                                absl::Duration ttl,
                                                                std::function<void()> on_lost) {
  const absl::Time sent = absl::Now();
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> grant = client->GrantLease(ttl);
  if (!grant.ok()) return grant.status();
  if (!grant->error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd LeaseGrant: ", grant->error()));
  }
  auto impl = std::make_unique<Impl>();
  impl->owner = client;
  impl->client = client->impl_.get();
  impl->id = grant->id();
  impl->ttl = absl::Seconds(grant->ttl());
  impl->on_lost = std::move(on_lost);
  {
    absl::MutexLock lock(&impl->mu);
    impl->valid_until = sent + impl->ttl;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<LeaseKeeper>(new LeaseKeeper(std::move(impl)));
}

LeaseKeeper::LeaseKeeper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LeaseKeeper::~LeaseKeeper() { impl_->Stop(); }

int64_t LeaseKeeper::id() const { return impl_->id; }

absl::Duration LeaseKeeper::ttl() const { return impl_->ttl; }

absl::Time LeaseKeeper::ValidUntil() const { return impl_->ValidUntil(); }

bool LeaseKeeper::Lost() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->LostLocked();
}

absl::Status LeaseKeeper::Revoke() {
  impl_->Stop();
  {
    absl::MutexLock lock(&impl_->mu);
    impl_->valid_until = absl::InfinitePast();
  }
  return impl_->owner->RevokeLease(impl_->id);
}

}  // namespace adaptd::etcd
