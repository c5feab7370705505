// What routing needs to know of a call in a cluster (docs/CLUSTER_ETCD.md, "Routing"): what it
// does to its store, and who it came from. EtcdCluster::Route decides where it runs; every
// front end relays in its own form.
#ifndef ADAPTD_SERVER_CLUSTER_ROUTING_H_
#define ADAPTD_SERVER_CLUSTER_ROUTING_H_

#include <string>

namespace adaptd {

// What a call does to its store, for routing.
enum class Access {
  kRead,    // GetStore, Predict, PredictStream, ExportStore
  kWrite,   // Adapt, Forget, Compile, PinStore
  kCreate,  // CreateStore, ImportStore
  kDelete,  // DeleteStore
};

namespace cluster {

// Who a call came from, as routing needs it.
struct CallOrigin {
  bool forwarded = false;    // another member forwarded the call (marked so)
  std::string forwarded_by;  // the member that forwarded it, as marked; "" when none did
};

}  // namespace cluster
}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_ROUTING_H_
