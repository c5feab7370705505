// The bodies of ExportStore and ImportStore over HTTP (docs/HTTP.md, "ExportStore and
// ImportStore"): length-delimited protobuf messages, each a varint length and then that many
// bytes of the message, as protobuf's writeDelimitedTo writes them. AppendDelimited writes one;
// DelimitedBody reads them from a request body as it arrives, each at most max_message_bytes.
// Not thread-safe: one call's connection thread reads it.
#ifndef ADAPTD_SERVER_HTTP_DELIMITED_BODY_H_
#define ADAPTD_SERVER_HTTP_DELIMITED_BODY_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "google/protobuf/message_lite.h"
#include "server/http/write_body.h"

namespace adaptd::http {

// Appends `message`'s varint length and its bytes to `*out`.
void AppendDelimited(const google::protobuf::MessageLite& message, std::string* out);

class DelimitedBody {
 public:
  DelimitedBody(BodyReader read, size_t max_message_bytes)
      : read_(std::move(read)), max_message_bytes_(max_message_bytes) {}

  // The next message's bytes into `*message`: true, or false at the body's end; a refusal
  // when the body cannot be read on (400 for a truncated or malformed body, 413 for a message
  // past max_message_bytes; nothing after it is read).
  std::optional<BodyRefusal> Next(std::string* message, bool* got);

  // Messages handed out so far.
  size_t messages() const { return messages_; }
  // Whether the body was read to its end (an answer before that closes the connection).
  bool ended() const { return ended_ && pending_.size() == offset_; }

 private:
  // Reads one more piece into pending_: false at the end of the body.
  std::optional<BodyRefusal> ReadMore(bool* more);
  // Unread bytes in pending_.
  size_t available() const { return pending_.size() - offset_; }

  BodyReader read_;
  const size_t max_message_bytes_;
  std::vector<char> buffer_;  // each piece as read
  std::string pending_;       // read, from offset_ not yet handed out
  size_t offset_ = 0;
  size_t read_bytes_ = 0;  // of the whole body
  size_t messages_ = 0;
  bool ended_ = false;
};

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_DELIMITED_BODY_H_
