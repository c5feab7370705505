// EtcdWatcher: one thread reads the range and then holds a Watch stream; a second thread per
// stream sends a progress request every third of the stall timeout and cancels the stream when
// nothing came back for the whole timeout (a member that accepts TCP but does not answer).
// The stream asks etcd to cancel it when its member loses the leader ("hasleader" metadata),
// since such a member would otherwise go on answering with nothing new.
#include "server/etcd/etcd_watcher.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/etcd/etcd_client_impl.h"

namespace adaptd::etcd {

using WatchStream =
    grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>;

struct EtcdWatcher::Impl {
  EtcdClient* owner = nullptr;
  EtcdConnection* client = nullptr;
  std::string prefix;
  Callbacks callbacks;
  Options options;

  mutable absl::Mutex mu;
  int64_t delivered ABSL_GUARDED_BY(mu) = 0;
  int resets ABSL_GUARDED_BY(mu) = 0;
  int streams ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  absl::Time last_heard ABSL_GUARDED_BY(mu);
  bool stream_done ABSL_GUARDED_BY(mu) = false;
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;  // the open stream's
  std::thread thread;

  enum class Outcome { kBroken, kCompacted, kStopped };

  void Run();
  // Reads the whole range and delivers it; false when it failed (etcd unreachable).
  bool Reset();
  // Follows the changes over one stream at `endpoint` until it breaks or the watcher stops.
  Outcome WatchOver(size_t endpoint);
  Outcome Follow(WatchStream* stream);
  void Ping(WatchStream* stream);
  void Deliver(const etcdserverpb::WatchResponse& response);
  // Sleeps `d` unless the watcher stops first; false when it stops.
  bool Pause(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu);
  bool Stopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping; }
  bool StreamDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || stream_done; }
  void Stop();
};

bool EtcdWatcher::Impl::Pause(absl::Duration d) {
  absl::MutexLock lock(&mu);
  mu.AwaitWithTimeout(absl::Condition(this, &Impl::Stopping), d);
  return !stopping;
}

bool EtcdWatcher::Impl::Reset() {
  int64_t revision = 0;
  absl::StatusOr<std::vector<mvccpb::KeyValue>> kvs =
      owner->RangePrefix(prefix, /*keys_only=*/false, &revision);
  if (!kvs.ok()) return false;
  if (callbacks.on_reset) callbacks.on_reset(*kvs, revision);
  absl::MutexLock lock(&mu);
  delivered = revision;
  ++resets;
  return true;
}

void EtcdWatcher::Impl::Deliver(const etcdserverpb::WatchResponse& response) {
  std::vector<mvccpb::Event> events(response.events().begin(), response.events().end());
  int64_t last = 0;
  for (const mvccpb::Event& event : events) last = std::max(last, event.kv().mod_revision());
  if (callbacks.on_events) callbacks.on_events(events);
  absl::MutexLock lock(&mu);
  delivered = std::max(delivered, last);
}

void EtcdWatcher::Impl::Ping(WatchStream* stream) {
  etcdserverpb::WatchRequest progress;
  progress.mutable_progress_request();
  const absl::Duration interval = options.stall_timeout / 3;
  absl::MutexLock lock(&mu);
  while (!stream_done && !stopping) {
    if (absl::Now() - last_heard >= options.stall_timeout) {
      context->TryCancel();
      return;
    }
    mu.Unlock();
    const bool written = stream->Write(progress);
    mu.Lock();
    if (!written) return;
    mu.AwaitWithTimeout(absl::Condition(this, &Impl::StreamDone), interval);
  }
}

EtcdWatcher::Impl::Outcome EtcdWatcher::Impl::Follow(WatchStream* stream) {
  etcdserverpb::WatchResponse response;
  while (stream->Read(&response)) {
    {
      absl::MutexLock lock(&mu);
      last_heard = absl::Now();
      if (stopping) return Outcome::kStopped;
    }
    // A start revision that was compacted: the watch is refused with the compaction's revision.
    if (response.compact_revision() > 0) return Outcome::kCompacted;
    if (response.canceled()) return Outcome::kBroken;  // e.g. the member lost its leader
    if (!response.events().empty()) Deliver(response);
  }
  return Outcome::kBroken;
}

EtcdWatcher::Impl::Outcome EtcdWatcher::Impl::WatchOver(size_t endpoint) {
  grpc::ClientContext stream_context;
  stream_context.AddMetadata("hasleader", "true");
  int64_t from = 0;
  {
    absl::MutexLock lock(&mu);
    if (stopping) return Outcome::kStopped;
    context = &stream_context;
    stream_done = false;
    last_heard = absl::Now();
    from = delivered + 1;
  }
  auto forget_context = [this] {
    absl::MutexLock lock(&mu);
    context = nullptr;
  };
  if (!client->Connected(endpoint, absl::Now() + options.stall_timeout)) {
    forget_context();
    return Outcome::kBroken;
  }
  std::unique_ptr<WatchStream> stream = client->endpoints[endpoint].watch->Watch(&stream_context);
  {
    absl::MutexLock lock(&mu);
    ++streams;
  }
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key(prefix);
  create.mutable_create_request()->set_range_end(PrefixEnd(prefix));
  create.mutable_create_request()->set_start_revision(from);
  Outcome outcome = Outcome::kBroken;
  if (stream->Write(create)) {
    std::thread pinger([this, &stream] { Ping(stream.get()); });
    outcome = Follow(stream.get());
    {
      absl::MutexLock lock(&mu);
      stream_done = true;
    }
    stream_context.TryCancel();
    pinger.join();
  } else {
    stream_context.TryCancel();
  }
  stream->Finish();
  forget_context();
  if (outcome != Outcome::kBroken) client->Answered(endpoint);
  return outcome;
}

void EtcdWatcher::Impl::Run() {
  bool reset_needed = true;
  size_t endpoint = client->Current();
  for (;;) {
    if (reset_needed) {
      if (!Reset()) {
        if (!Pause(options.retry_delay)) return;
        continue;
      }
      reset_needed = false;
    }
    switch (WatchOver(endpoint)) {
      case Outcome::kStopped:
        return;
      case Outcome::kCompacted:
        reset_needed = true;
        break;
      case Outcome::kBroken:
        client->Failed(endpoint);
        endpoint = (endpoint + 1) % client->endpoints.size();
        if (!Pause(options.retry_delay)) return;
        break;
    }
  }
}

void EtcdWatcher::Impl::Stop() {
  {
    absl::MutexLock lock(&mu);
    stopping = true;
    if (context != nullptr) context->TryCancel();
  }
  if (thread.joinable()) thread.join();
}

std::unique_ptr<EtcdWatcher> EtcdWatcher::Start(EtcdClient* client, std::string prefix,
                                                Callbacks callbacks, Options options) {
  auto impl = std::make_unique<Impl>();
  impl->owner = client;
  impl->client = client->impl_.get();
  impl->prefix = std::move(prefix);
  impl->callbacks = std::move(callbacks);
  impl->options = options;
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<EtcdWatcher>(new EtcdWatcher(std::move(impl)));
}

EtcdWatcher::EtcdWatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EtcdWatcher::~EtcdWatcher() { impl_->Stop(); }

int64_t EtcdWatcher::revision() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->delivered;
}

int EtcdWatcher::resets() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->resets;
}

int EtcdWatcher::streams() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->streams;
}

bool EtcdWatcher::WaitFor(int64_t revision, absl::Duration timeout) const {
  absl::MutexLock lock(&impl_->mu);
  auto reached = [this, revision]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
    return impl_->delivered >= revision;
  };
  return impl_->mu.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

}  // namespace adaptd::etcd
