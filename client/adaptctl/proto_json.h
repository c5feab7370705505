// Protobuf messages as JSON for adaptctl's summaries. Stateless; thread-safe.
//
// Unlike protobuf's JSON mapping, 64-bit integers are JSON numbers (scripts compare counts
// without parsing strings) and field names keep their .proto spelling. Fields without presence
// are always printed; fields with presence (messages, oneof members, `optional`) only when
// set. Enums print as their names, bytes as base64, floats in their shortest exact form.
#ifndef ADAPTD_CLIENT_ADAPTCTL_PROTO_JSON_H_
#define ADAPTD_CLIENT_ADAPTCTL_PROTO_JSON_H_

#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace adaptctl {

// JSON objects keep their keys in insertion order, so summaries read in a stable order.
using Json = nlohmann::ordered_json;

Json MessageToJson(const google::protobuf::Message& message);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_PROTO_JSON_H_
