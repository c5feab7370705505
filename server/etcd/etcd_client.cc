// EtcdClient: the endpoints, the failover loop every call goes through, and etcd's calls.
#include "server/etcd/etcd_client.h"

#include <climits>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/etcd/etcd_client_impl.h"

namespace adaptd::etcd {
namespace {

using etcdserverpb::AlarmRequest;
using etcdserverpb::AlarmResponse;

constexpr int64_t kPageKeys = 1000;

// A Txn, Put, DeleteRange or membership change is not sent again once it may have been applied.
enum class Retry { kOnEveryEndpoint, kOnlyIfNotSent };

absl::StatusOr<std::string> ReadTlsFile(const char* field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// "http://H:P", "https://H:P" or "H:P" as H:P, and whether it wants TLS.
absl::StatusOr<std::string> Normalise(const std::string& endpoint, bool* tls) {
  std::string address = endpoint;
  *tls = false;
  if (absl::StartsWith(address, "https://")) {
    *tls = true;
    address = address.substr(8);
  } else if (absl::StartsWith(address, "http://")) {
    address = address.substr(7);
  } else if (absl::StrContains(address, "://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoints: \"", endpoint, "\" is not http://, https:// or HOST:PORT"));
  }
  while (absl::EndsWith(address, "/")) address.pop_back();
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoints: \"", endpoint, "\" has no HOST:PORT"));
  }
  return address;
}

// The call `send` of the helpers below: `rpc` of the endpoint's `stub` with `request`.
template <typename Stub, typename Request, typename Response>
auto Via(std::unique_ptr<Stub> EtcdEndpoint::*stub,
         grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
         const Request& request) {
  return [stub, rpc, &request](EtcdEndpoint& e, grpc::ClientContext* context, Response* out) {
    return ((*(e.*stub)).*rpc)(context, request, out);
  };
}

// One attempt of `send` at endpoint `index`; `*sent` tells whether the request left.
template <typename Response, typename Send>
absl::StatusOr<Response> Attempt(EtcdConnection& impl, size_t index, const char* method,
                                 const Send& send, bool* sent, bool* never_applied) {
  EtcdEndpoint& endpoint = impl.endpoints[index];
  const absl::Time deadline = absl::Now() + impl.options.call_timeout;
  *sent = false;
  *never_applied = false;
  if (!impl.Connected(index, deadline)) {
    return absl::UnavailableError(
        absl::StrCat("etcd ", method, " at ", endpoint.address, ": cannot connect"));
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  Response response;
  *sent = true;
  const grpc::Status status = send(endpoint, &context, &response);
  if (status.ok()) return response;
  *never_applied = NeverApplied(status);
  return EtcdError(status, method, endpoint.address);
}

// `send` at the current endpoint, then at the next ones while they fail as endpoints do.
template <typename Response, typename Send>
absl::StatusOr<Response> Call(EtcdConnection& impl, const char* method, Retry retry,
                              const Send& send) {
  const size_t count = impl.endpoints.size();
  const size_t start = impl.Current();
  std::vector<std::string> failures;
  for (size_t i = 0; i < count; ++i) {
    const size_t index = (start + i) % count;
    bool sent = false;
    bool never_applied = false;
    absl::StatusOr<Response> response =
        Attempt<Response>(impl, index, method, send, &sent, &never_applied);
    if (response.ok()) {
      impl.Answered(index);
      return response;
    }
    if (!IsEndpointFailure(response.status())) return response.status();
    impl.Failed(index);
    if (retry == Retry::kOnlyIfNotSent && sent && !never_applied) {
      return OutcomeUnknown(response.status());
    }
    failures.emplace_back(response.status().message());
  }
  return absl::UnavailableError(absl::StrCat("etcd ", method, ": no endpoint answered (",
                                             absl::StrJoin(failures, "; "), ")"));
}

// `send` at one endpoint only (maintenance of that member).
template <typename Response, typename Send>
absl::StatusOr<Response> CallAt(EtcdConnection& impl, const std::string& endpoint,
                                const char* method, const Send& send) {
  bool tls = false;
  absl::StatusOr<std::string> address = Normalise(endpoint, &tls);
  for (size_t index = 0; address.ok() && index < impl.addresses.size(); ++index) {
    if (impl.addresses[index] != *address) continue;
    bool sent = false;
    bool never_applied = false;
    return Attempt<Response>(impl, index, method, send, &sent, &never_applied);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("etcd ", method, ": \"", endpoint, "\" is not one of the client's endpoints"));
}

}  // namespace

namespace {

etcdserverpb::Compare Equal(const std::string& key, etcdserverpb::Compare::CompareTarget target) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  compare.set_target(target);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  return compare;
}

}  // namespace

etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision) {
  etcdserverpb::Compare compare = Equal(key, etcdserverpb::Compare::CREATE);
  compare.set_create_revision(revision);
  return compare;
}

etcdserverpb::Compare ModRevisionIs(const std::string& key, int64_t revision) {
  etcdserverpb::Compare compare = Equal(key, etcdserverpb::Compare::MOD);
  compare.set_mod_revision(revision);
  return compare;
}

etcdserverpb::Compare VersionIs(const std::string& key, int64_t version) {
  etcdserverpb::Compare compare = Equal(key, etcdserverpb::Compare::VERSION);
  compare.set_version(version);
  return compare;
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    const auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // with key "\0": every key
}

size_t EtcdConnection::Current() const {
  absl::MutexLock lock(&mu);
  return current;
}

void EtcdConnection::Answered(size_t index) {
  absl::MutexLock lock(&mu);
  current = index;
}

void EtcdConnection::Failed(size_t index) {
  absl::MutexLock lock(&mu);
  if (current == index) current = (index + 1) % endpoints.size();
}

bool EtcdConnection::Connected(size_t index, absl::Time deadline) const {
  grpc::Channel& channel = *endpoints[index].channel;
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
    if (!channel.WaitForStateChange(state, absl::ToChronoTime(deadline))) return false;
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return state == GRPC_CHANNEL_READY;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(EtcdOptions options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("endpoints: none given");
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("cert_file and key_file: give both or neither");
  }
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("call_timeout: must be positive");
  }
  grpc::SslCredentialsOptions tls_files;
  if (!options.ca_file.empty()) {
    ASSIGN_OR_RETURN(tls_files.pem_root_certs, ReadTlsFile("ca_file", options.ca_file));
  }
  if (!options.cert_file.empty()) {
    ASSIGN_OR_RETURN(tls_files.pem_cert_chain, ReadTlsFile("cert_file", options.cert_file));
    ASSIGN_OR_RETURN(tls_files.pem_private_key, ReadTlsFile("key_file", options.key_file));
  }
  auto impl = std::make_unique<Impl>();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  // A member that comes back is used again within a second.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (const std::string& endpoint : options.endpoints) {
    bool tls = false;
    ASSIGN_OR_RETURN(std::string address, Normalise(endpoint, &tls));
    EtcdEndpoint& e = impl->endpoints.emplace_back();
    e.address = address;
    e.channel = grpc::CreateCustomChannel(
        address, tls ? grpc::SslCredentials(tls_files) : grpc::InsecureChannelCredentials(), args);
    e.kv = etcdserverpb::KV::NewStub(e.channel);
    e.lease = etcdserverpb::Lease::NewStub(e.channel);
    e.maintenance = etcdserverpb::Maintenance::NewStub(e.channel);
    e.cluster = etcdserverpb::Cluster::NewStub(e.channel);
    e.watch = etcdserverpb::Watch::NewStub(e.channel);
    impl->addresses.push_back(std::move(address));
  }
  impl->options = std::move(options);
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(impl)));
}

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdClient::~EtcdClient() = default;

const std::vector<std::string>& EtcdClient::endpoints() const { return impl_->addresses; }

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  return Call<etcdserverpb::RangeResponse>(
      *impl_, "Range", Retry::kOnEveryEndpoint,
      Via(&EtcdEndpoint::kv, &etcdserverpb::KV::Stub::Range, request));
}

absl::StatusOr<std::vector<mvccpb::KeyValue>> EtcdClient::RangePrefix(const std::string& prefix,
                                                                      bool keys_only,
                                                                      int64_t* revision) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix.empty() ? std::string(1, '\0') : prefix);
  request.set_range_end(PrefixEnd(prefix));
  request.set_limit(kPageKeys);
  request.set_keys_only(keys_only);
  std::vector<mvccpb::KeyValue> out;
  int64_t at = 0;
  for (;;) {
    request.set_revision(at);
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse page, Range(request));
    if (at == 0) at = page.header().revision();
    for (mvccpb::KeyValue& kv : *page.mutable_kvs()) out.push_back(std::move(kv));
    if (!page.more() || page.kvs().empty()) break;
    request.set_key(out.back().key() + '\0');
  }
  if (revision != nullptr) *revision = at;
  return out;
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(const etcdserverpb::PutRequest& request) {
  return Call<etcdserverpb::PutResponse>(
      *impl_, "Put", Retry::kOnlyIfNotSent,
      Via(&EtcdEndpoint::kv, &etcdserverpb::KV::Stub::Put, request));
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request) {
  return Call<etcdserverpb::DeleteRangeResponse>(
      *impl_, "DeleteRange", Retry::kOnlyIfNotSent,
      Via(&EtcdEndpoint::kv, &etcdserverpb::KV::Stub::DeleteRange, request));
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request) {
  return Call<etcdserverpb::TxnResponse>(
      *impl_, "Txn", Retry::kOnlyIfNotSent,
      Via(&EtcdEndpoint::kv, &etcdserverpb::KV::Stub::Txn, request));
}

absl::Status EtcdClient::Compact(int64_t revision, bool physical) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  request.set_physical(physical);
  return Call<etcdserverpb::CompactionResponse>(
             *impl_, "Compact", Retry::kOnEveryEndpoint,
             Via(&EtcdEndpoint::kv, &etcdserverpb::KV::Stub::Compact, request))
      .status();
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::GrantLease(absl::Duration ttl) {
  if (ttl < absl::Seconds(1) || ttl != absl::Seconds(absl::ToInt64Seconds(ttl))) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd LeaseGrant: ttl ", absl::FormatDuration(ttl),
                     " is not a whole number of seconds, at least 1"));
  }
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(absl::ToInt64Seconds(ttl));
  return Call<etcdserverpb::LeaseGrantResponse>(
      *impl_, "LeaseGrant", Retry::kOnEveryEndpoint,
      Via(&EtcdEndpoint::lease, &etcdserverpb::Lease::Stub::LeaseGrant, request));
}

absl::Status EtcdClient::RevokeLease(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  return Call<etcdserverpb::LeaseRevokeResponse>(
             *impl_, "LeaseRevoke", Retry::kOnEveryEndpoint,
             Via(&EtcdEndpoint::lease, &etcdserverpb::Lease::Stub::LeaseRevoke, request))
      .status();
}

absl::StatusOr<int64_t> EtcdClient::LeaseTimeToLive(int64_t id) {
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(id);
  absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> response =
      Call<etcdserverpb::LeaseTimeToLiveResponse>(
          *impl_, "LeaseTimeToLive", Retry::kOnEveryEndpoint,
          Via(&EtcdEndpoint::lease, &etcdserverpb::Lease::Stub::LeaseTimeToLive, request));
  if (absl::IsNotFound(response.status())) return -1;
  if (!response.ok()) return response.status();
  return response->ttl();
}

absl::StatusOr<etcdserverpb::StatusResponse> EtcdClient::Status(const std::string& endpoint) {
  const etcdserverpb::StatusRequest request;
  return CallAt<etcdserverpb::StatusResponse>(
      *impl_, endpoint, "Status",
      Via(&EtcdEndpoint::maintenance, &etcdserverpb::Maintenance::Stub::Status, request));
}

absl::Status EtcdClient::Defragment(const std::string& endpoint) {
  const etcdserverpb::DefragmentRequest request;
  return CallAt<etcdserverpb::DefragmentResponse>(
             *impl_, endpoint, "Defragment",
             Via(&EtcdEndpoint::maintenance, &etcdserverpb::Maintenance::Stub::Defragment, request))
      .status();
}

namespace {

absl::StatusOr<AlarmResponse> Alarm(EtcdConnection& impl, const AlarmRequest& request) {
  return Call<AlarmResponse>(
      impl, "Alarm", Retry::kOnEveryEndpoint,
      Via(&EtcdEndpoint::maintenance, &etcdserverpb::Maintenance::Stub::Alarm, request));
}

}  // namespace

absl::StatusOr<AlarmResponse> EtcdClient::Alarms() {
  AlarmRequest request;
  request.set_action(AlarmRequest::GET);
  return Alarm(*impl_, request);
}

absl::Status EtcdClient::DisarmAlarms() {
  ASSIGN_OR_RETURN(AlarmResponse alarms, Alarms());
  for (const etcdserverpb::AlarmMember& alarm : alarms.alarms()) {
    AlarmRequest request;
    request.set_action(AlarmRequest::DEACTIVATE);
    request.set_memberid(alarm.memberid());
    request.set_alarm(alarm.alarm());
    RETURN_IF_ERROR(Alarm(*impl_, request).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<etcdserverpb::MemberListResponse> EtcdClient::MemberList() {
  const etcdserverpb::MemberListRequest request;
  return Call<etcdserverpb::MemberListResponse>(
      *impl_, "MemberList", Retry::kOnEveryEndpoint,
      Via(&EtcdEndpoint::cluster, &etcdserverpb::Cluster::Stub::MemberList, request));
}

absl::StatusOr<etcdserverpb::MemberAddResponse> EtcdClient::MemberAdd(
    const std::vector<std::string>& peer_urls) {
  etcdserverpb::MemberAddRequest request;
  for (const std::string& url : peer_urls) request.add_peerurls(url);
  return Call<etcdserverpb::MemberAddResponse>(
      *impl_, "MemberAdd", Retry::kOnlyIfNotSent,
      Via(&EtcdEndpoint::cluster, &etcdserverpb::Cluster::Stub::MemberAdd, request));
}

absl::Status EtcdClient::MemberRemove(uint64_t id) {
  etcdserverpb::MemberRemoveRequest request;
  request.set_id(id);
  return Call<etcdserverpb::MemberRemoveResponse>(
             *impl_, "MemberRemove", Retry::kOnlyIfNotSent,
             Via(&EtcdEndpoint::cluster, &etcdserverpb::Cluster::Stub::MemberRemove, request))
      .status();
}

}  // namespace adaptd::etcd
