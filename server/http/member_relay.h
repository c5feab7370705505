// The relays of the HTTP front end's calls to other cluster members (docs/HTTP.md, "A
// cluster") over the gRPC front end's channels (`Forwarder`, server/cluster/forwarding.h):
// each call carries the HTTP call's deadline, its bearer token as `authorization` metadata
// and the forwarded mark. Thread-safe; the forwarder must outlive what is made here.
#ifndef ADAPTD_SERVER_HTTP_MEMBER_RELAY_H_
#define ADAPTD_SERVER_HTTP_MEMBER_RELAY_H_

#include "server/http/api.h"

namespace adaptd {
class Forwarder;  // server/cluster/forwarding.h
}  // namespace adaptd

namespace adaptd::http {

// The unary and the streamed relays over `forwarder`'s channels; null members without one.
Relays RelaysOver(Forwarder* forwarder);

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_MEMBER_RELAY_H_
