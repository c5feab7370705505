// Service: the request logic of adaptd under every transport (docs/ARCHITECTURE.md, "Layers").
// It owns admission (draining, authentication, authorization, quotas through the engine),
// the routing decision in a cluster, and scheduling: each call takes protobuf messages,
// queues its work on the scheduler (or the compile pool) and completes once through a
// callback, on a worker thread; nothing here blocks the caller's thread. The engine validates
// and computes. Front ends (server/rpc for gRPC) map their transport onto these calls and
// relay a call to another member in their own form when Route says so. Thread-safe.
#ifndef ADAPTD_SERVER_SERVICE_SERVICE_H_
#define ADAPTD_SERVER_SERVICE_SERVICE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "server/auth/token_authorizer.h"
#include "server/cluster/membership.h"
#include "server/core/engine.h"
#include "server/metrics/metrics.h"
#include "server/scheduler/scheduler.h"
#include "server/service/call_gate.h"
#include "server/service/call_info.h"

namespace adaptd {

class EtcdCluster;  // server/cluster/etcd_cluster.h

// The front end a call came over: the `transport` label of the request metrics.
enum class Transport { kGrpc, kHttp };

struct ServiceOptions {
  Engine* engine = nullptr;
  // Runs every request's work: per-tenant queues, deadlines, lanes, predict batches.
  Scheduler* scheduler = nullptr;
  Metrics* metrics = nullptr;             // nullable
  const TokenAuthorizer* auth = nullptr;  // nullable: authentication off
  CallGate* gate = nullptr;               // nullable; closed once shutdown began
  EtcdCluster* etcd_cluster = nullptr;    // a cluster on etcd's member; else null
  size_t max_import_bytes = size_t{4} << 30;
  size_t export_chunk_bytes = 1 << 20;
};

class Service {
 public:
  // Called exactly once with the call's outcome; a result is in the response given.
  using Done = std::function<void(const absl::Status&)>;

  explicit Service(const ServiceOptions& options) : o_(options) {}

  // --- Admission --------------------------------------------------------------------------
  // At the start of a call: UNAVAILABLE once the server drains, then Authorize; on OK
  // `*admitted` holds the call's place in the gate until it is destroyed.
  absl::Status Admit(const CallInfo& call, absl::string_view tenant, AdmittedCall* admitted) const;
  // May the caller touch `tenant`? ("" only authenticates; the request is then invalid and the
  // engine says so.) For each later message of a stream too.
  absl::Status Authorize(const CallInfo& call, absl::string_view tenant) const;
  // The cluster calls: admin tokens only; FAILED_PRECONDITION on a single server.
  absl::Status AdmitAdmin(const CallInfo& call) const;
  // CreateStore with spec.base: PERMISSION_DENIED naming spec.base when the caller may not
  // read the base's tenant; INVALID_ARGUMENT for a malformed name.
  absl::Status CheckBase(const CallInfo& call, const adapt::v1::CreateStoreRequest& request) const;

  // --- Routing ----------------------------------------------------------------------------
  // Where a call for tenant/store that does `access` runs: null (here) or the member to pass
  // it to; an error to answer instead (a store in motion, or a forwarded call not ours).
  absl::StatusOr<const cluster::Member*> Route(const CallInfo& call, const std::string& tenant,
                                               const std::string& store, Access access) const;
  // The response header `adaptd-holder` of a call Route sent to `holder` (docs/
  // CLUSTER_OPERATIONS.md, "Clients route to holders"): "SSSS NAME HOST:PORT REVISION"; ""
  // for none.
  std::string HolderHint(const std::string& tenant, const std::string& store,
                         const cluster::Member& holder) const;
  // A listing that gathers every member's pages (a cluster's, not forwarded): the other
  // members to ask; nullopt when this member's page is the answer.
  std::optional<std::vector<const cluster::Member*>> ListPeers(const CallInfo& call) const;
  // Merges the members' pages of one listing (this member's included).
  static absl::Status MergeListPages(const adapt::v1::ListStoresRequest& request,
                                     std::vector<adapt::v1::ListStoresResponse>* pages,
                                     adapt::v1::ListStoresResponse* out);

  // --- Unary calls, served here -----------------------------------------------------------
  // `request` and `response` must stay valid until `done` runs.
  void CreateStore(const CallInfo& call, const adapt::v1::CreateStoreRequest& request,
                   adapt::v1::StoreInfo* response, Done done);
  void GetStore(const CallInfo& call, const adapt::v1::GetStoreRequest& request,
                adapt::v1::StoreInfo* response, Done done);
  // This member's page.
  void ListStores(const CallInfo& call, const adapt::v1::ListStoresRequest& request,
                  adapt::v1::ListStoresResponse* response, Done done);
  void DeleteStore(const CallInfo& call, const adapt::v1::DeleteStoreRequest& request,
                   adapt::v1::DeleteStoreResponse* response, Done done);
  void PinStore(const CallInfo& call, const adapt::v1::PinStoreRequest& request,
                adapt::v1::StoreInfo* response, Done done);
  void ListEncoders(const CallInfo& call, const adapt::v1::ListEncodersRequest& request,
                    adapt::v1::ListEncodersResponse* response, Done done);
  // Batchable: the scheduler answers it with other predicts.
  void Predict(const CallInfo& call, const adapt::v1::PredictRequest& request,
               adapt::v1::PredictResponse* response, Done done);
  // Feedback on served predictions (docs/FEEDBACK.md): a write, in the store's lane as an
  // Adapt's commit.
  void Feedback(const CallInfo& call, const adapt::v1::FeedbackRequest& request,
                adapt::v1::FeedbackResponse* response, Done done);
  // Runs on the compile pool.
  void Compile(const CallInfo& call, const adapt::v1::CompileRequest& request,
               adapt::v1::CompileResponse* response, Done done);
  // The store's snapshot file, whole, in `*file`.
  void Export(const CallInfo& call, const adapt::v1::ExportStoreRequest& request, std::string* file,
              Done done);
  // The size of the chunks a front end writes an export in.
  size_t export_chunk_bytes() const { return o_.export_chunk_bytes; }

  // --- ImportStore ------------------------------------------------------------------------
  // One import's snapshot file, gathered chunk by chunk, then imported.
  class Import {
   public:
    // Whether a chunk named the store yet (the front end routes the call on that chunk).
    bool named() const { return !tenant_.empty() || !store_.empty(); }
    // Takes one chunk: the first names the store and carries the applied example ids; a
    // later one must name the same store or none (INVALID_ARGUMENT); RESOURCE_EXHAUSTED once
    // the file would pass the import limit.
    absl::Status Add(const adapt::v1::StoreChunk& chunk);
    // Imports the file, in the store's lane; `*response` describes the store.
    void Commit(adapt::v1::StoreInfo* response, Done done);

   private:
    friend class Service;
    Import(const Service* service, CallInfo call) : service_(service), call_(std::move(call)) {}

    const Service* service_;
    const CallInfo call_;
    std::string tenant_, store_, file_;
    std::vector<std::string> applied_ids_;
  };
  std::unique_ptr<Import> StartImport(const CallInfo& call) const;

  // --- Adapt and Forget -------------------------------------------------------------------
  // One client stream's transaction: each message staged in order, committed at the end.
  template <typename Request, typename Response>
  class Write {
   public:
    // Stages one message (the front end authorized and routed it); runs `done` on a worker.
    // The first message picks the queue and the store's lane.
    void Stage(const Request& request, Done done);
    // Commits every staged message, in the store's lane; `*response` holds the outcome.
    void Commit(Response* response, Done done);

   private:
    friend class Service;
    Write(const Service* service, CallInfo call, TxnKind kind);

    const Service* service_;
    const CallInfo call_;
    std::unique_ptr<WriteSession> session_;
    std::string tenant_, lane_;
  };
  using AdaptWrite = Write<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>;
  using ForgetWrite = Write<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>;
  std::unique_ptr<AdaptWrite> StartAdapt(const CallInfo& call) const;
  std::unique_ptr<ForgetWrite> StartForget(const CallInfo& call) const;

  // The route table clients call holders by (any authenticated caller, after Admit):
  // UNIMPLEMENTED on a server that is not a member of a cluster on etcd.
  void ClusterRoutes(const CallInfo& call, const adapt::v1::ClusterRoutesRequest& request,
                     adapt::v1::ClusterRoutesResponse* response, Done done);

  // --- The cluster's calls (after AdmitAdmin) ---------------------------------------------
  void ClusterStatus(const CallInfo& call, const adapt::v1::ClusterStatusRequest& request,
                     adapt::v1::ClusterStatusResponse* response, Done done);
  void DrainMember(const CallInfo& call, const adapt::v1::DrainMemberRequest& request,
                   adapt::v1::DrainMemberResponse* response, Done done);
  void ClusterQuota(const CallInfo& call, const adapt::v1::ClusterQuotaRequest& request,
                    adapt::v1::ClusterQuotaResponse* response, Done done);
  void ClusterBase(const CallInfo& call, const adapt::v1::ClusterBaseRequest& request,
                   adapt::v1::ClusterBaseResponse* response, Done done);

  // Counts a finished call (adaptd_requests_total, adaptd_request_duration_seconds), labelled
  // with the transport it came over.
  void Record(const char* method, const absl::Status& status, absl::Time start,
              Transport transport) const;

 private:
  // Queues `fn` (returning absl::Status) in the call's tenant queue and runs `done` with its
  // status, or with the reason it did not run.
  void Queue(const CallInfo& call, const std::string& tenant, std::function<absl::Status()> fn,
             Done done) const;
  // A scheduler task carrying the call's deadline and cancellation.
  static Task CallTask(const CallInfo& call, const std::string& tenant);

  const ServiceOptions o_;
};

// The status to answer instead of running work whose call is already over: DEADLINE_EXCEEDED
// or CANCELLED; OK when the work should run.
absl::Status CallStillWanted(const CallInfo& call);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SERVICE_SERVICE_H_
