// A reader for the common shape of a Predict request in JSON, {"tenant": ..., "store": ...,
// "top_k": k, "inputs": [{"vector": {"values": [numbers]}}, ...]} in any order and spacing,
// read directly with std::from_chars: protobuf's JSON parser takes about 50 µs for 64 floats,
// this a few (docs/HTTP.md, "A first reading"). Anything else (another field or form, an
// escape in a string, a number out of range, a repeated key) it leaves to the JSON mapping, so
// that refusals and every other form stay the mapping's. Thread-safe.
#ifndef ADAPTD_SERVER_HTTP_PREDICT_JSON_H_
#define ADAPTD_SERVER_HTTP_PREDICT_JSON_H_

#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd::http {

// Reads `json` into `*request` when it has the shape above: true; false (`*request` then
// unspecified) for the JSON mapping to read it.
bool ReadPredictJson(absl::string_view json, adapt::v1::PredictRequest* request);

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_PREDICT_JSON_H_
