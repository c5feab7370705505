// The body of an Adapt or Forget over HTTP (docs/HTTP.md, "Adapt and Forget"), read as it
// arrives: newline-delimited JSON, one message a line, or one JSON array of messages. Splits
// it into the messages' JSON texts and holds the limits: the whole body at most
// max_call_bytes, one line (or the whole array) at most max_message_bytes. Not thread-safe:
// one call's connection thread reads it.
#ifndef ADAPTD_SERVER_HTTP_WRITE_BODY_H_
#define ADAPTD_SERVER_HTTP_WRITE_BODY_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace adaptd::http {

// Reads the next bytes of a request body into `buffer`: how many, 0 at its end, or a negative
// number when the connection failed.
using BodyReader = std::function<int(char* buffer, size_t size)>;

// A body that cannot be read on: the status and the HTTP status it is answered with (413 past
// a limit, 400 for a malformed array or a failed connection).
struct BodyRefusal {
  absl::Status status;
  int http_status;
};

// Reads the next piece of a body with `read` into `*buffer`: its size in `*got`, 0 once the
// body ended (`*ended` is then set, and nothing is read after it), or the refusal (400) of a
// failed connection. The buffer lives on the heap: civetweb's connection threads have small
// stacks.
std::optional<BodyRefusal> ReadPiece(const BodyReader& read, std::vector<char>* buffer, bool* ended,
                                     size_t* got);

struct WriteLimits {
  size_t max_message_bytes = size_t{64} << 20;  // --max-message-bytes
  size_t max_call_bytes = size_t{1} << 30;      // the whole body of one call
};

// One message of the body: its JSON text and where it was (1-based; `line` 0 in an array).
struct BodyMessage {
  std::string json;
  size_t index = 0;
  size_t line = 0;
};

class WriteBody {
 public:
  WriteBody(BodyReader read, WriteLimits limits) : read_(std::move(read)), limits_(limits) {}

  // The next message into `*message`: true, or false at the body's end; a refusal when the
  // body cannot be read on (nothing after it is read). Blank lines are skipped.
  std::optional<BodyRefusal> Next(BodyMessage* message, bool* got);

  // Whether the body was read to its end (an answer before that closes the connection).
  bool ended() const { return ended_ && pending_.empty() && array_.empty(); }

 private:
  // Reads one more chunk into pending_: false at the end of the body.
  std::optional<BodyRefusal> ReadMore(bool* more);
  // Reads the whole body as one JSON array into array_ (reversed, the first last).
  std::optional<BodyRefusal> ReadArray();
  std::optional<BodyRefusal> NextLine(BodyMessage* message, bool* got);

  BodyReader read_;
  const WriteLimits limits_;
  std::vector<char> buffer_;  // each chunk as read
  std::string pending_;       // read, not yet split
  size_t read_bytes_ = 0;
  size_t lines_ = 0;     // lines taken from pending_
  size_t messages_ = 0;  // messages handed out
  bool ended_ = false;
  bool started_ = false;  // the body's form is known
  bool is_array_ = false;
  std::vector<std::string> array_;
};

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_WRITE_BODY_H_
