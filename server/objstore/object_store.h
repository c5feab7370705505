// ObjectStore: immutable objects under keys, as the durable log keeps its large payloads,
// snapshots and read-outs (docs/DURABLE_LOG.md). S3ObjectStore (s3_object_store.h) speaks the
// S3 API; keys are relative to its bucket and prefix. Thread-safe.
#ifndef ADAPTD_SERVER_OBJSTORE_OBJECT_STORE_H_
#define ADAPTD_SERVER_OBJSTORE_OBJECT_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace adaptd {

class ObjectStore {
 public:
  struct Object {
    std::string key;  // relative to the store's prefix
    uint64_t size = 0;
    absl::Time modified;
  };

  virtual ~ObjectStore() = default;

  // Writes `bytes` under `key`, whole or not at all (a reader never sees part of it).
  virtual absl::Status Put(const std::string& key, absl::string_view bytes) = 0;
  // The bytes under `key`; NotFound naming the key when there is no such object.
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  // Removes `key`; OK when there was no such object.
  virtual absl::Status Delete(const std::string& key) = 0;
  // Every object whose key starts with `key_prefix`, in key order.
  virtual absl::StatusOr<std::vector<Object>> List(const std::string& key_prefix) = 0;
  // Where `key` is, for messages ("s3://BUCKET/PREFIX/KEY").
  virtual std::string Describe(const std::string& key) const = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_OBJSTORE_OBJECT_STORE_H_
