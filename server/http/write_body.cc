#include "server/http/write_body.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace adaptd::http {
namespace {

constexpr char kBlank[] = " \t\r\n";

BodyRefusal TooLarge(std::string what) {
  return {absl::ResourceExhaustedError(std::move(what)), 413};
}

}  // namespace

std::optional<BodyRefusal> ReadPiece(const BodyReader& read, std::vector<char>* buffer, bool* ended,
                                     size_t* got) {
  *got = 0;
  if (*ended) return std::nullopt;
  buffer->resize(64 << 10);
  const int n = read(buffer->data(), buffer->size());
  if (n < 0) {
    return BodyRefusal{absl::InvalidArgumentError("request body: the connection failed"), 400};
  }
  *got = static_cast<size_t>(n);
  *ended = n == 0;
  return std::nullopt;
}

std::optional<BodyRefusal> WriteBody::ReadMore(bool* more) {
  *more = false;
  size_t got = 0;
  if (auto refused = ReadPiece(read_, &buffer_, &ended_, &got)) return refused;
  if (got == 0) return std::nullopt;
  read_bytes_ += got;
  if (read_bytes_ > limits_.max_call_bytes) {
    return TooLarge(absl::StrCat("request body: the call passed ", limits_.max_call_bytes,
                                 " bytes, the server's limit on one Adapt or Forget call; "
                                 "nothing was committed"));
  }
  pending_.append(buffer_.data(), got);
  *more = true;
  return std::nullopt;
}

std::optional<BodyRefusal> WriteBody::Next(BodyMessage* message, bool* got) {
  *got = false;
  while (!started_) {
    const size_t first = pending_.find_first_not_of(kBlank);
    if (first != std::string::npos) {
      started_ = true;
      is_array_ = pending_[first] == '[';
      if (is_array_) {
        if (auto refused = ReadArray()) return refused;
      }
      break;
    }
    bool more = false;
    if (auto refused = ReadMore(&more)) return refused;
    if (!more) return std::nullopt;  // an empty body: no message
  }
  if (!is_array_) return NextLine(message, got);
  if (array_.empty()) return std::nullopt;
  message->json = std::move(array_.back());
  array_.pop_back();
  message->index = ++messages_;
  message->line = 0;
  *got = true;
  return std::nullopt;
}

std::optional<BodyRefusal> WriteBody::NextLine(BodyMessage* message, bool* got) {
  size_t scanned = 0;
  for (;;) {
    const size_t end = pending_.find('\n', scanned);
    const bool last = end == std::string::npos && ended_;
    if (end != std::string::npos || last) {
      const size_t length = end == std::string::npos ? pending_.size() : end;
      ++lines_;
      if (length > limits_.max_message_bytes) {
        return TooLarge(absl::StrCat("request body, message ", messages_ + 1, " (line ", lines_,
                                     "): larger than ", limits_.max_message_bytes,
                                     " bytes, the server's --max-message-bytes"));
      }
      std::string line = pending_.substr(0, length);
      pending_.erase(0, end == std::string::npos ? length : length + 1);
      scanned = 0;
      if (line.find_first_not_of(kBlank) == std::string::npos) {
        if (last) return std::nullopt;
        continue;
      }
      message->json = std::move(line);
      message->index = ++messages_;
      message->line = lines_;
      *got = true;
      return std::nullopt;
    }
    if (pending_.size() > limits_.max_message_bytes) {
      return TooLarge(absl::StrCat("request body, message ", messages_ + 1, " (line ", lines_ + 1,
                                   "): larger than ", limits_.max_message_bytes,
                                   " bytes, the server's --max-message-bytes"));
    }
    scanned = pending_.size();
    bool more = false;
    if (auto refused = ReadMore(&more)) return refused;
    if (!more && pending_.empty()) return std::nullopt;
  }
}

std::optional<BodyRefusal> WriteBody::ReadArray() {
  for (bool more = true; more;) {
    if (pending_.size() > limits_.max_message_bytes) {
      return TooLarge(absl::StrCat("request body: a JSON array of messages is at most ",
                                   limits_.max_message_bytes,
                                   " bytes (--max-message-bytes); send newline-delimited JSON, "
                                   "one message a line, for a larger call"));
    }
    if (auto refused = ReadMore(&more)) return refused;
  }
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(pending_);
  } catch (const nlohmann::json::exception& e) {
    return BodyRefusal{absl::InvalidArgumentError(
                           absl::StrCat("request body: not a JSON array of messages: ", e.what())),
                       400};
  }
  pending_.clear();
  if (!parsed.is_array()) {
    return BodyRefusal{absl::InvalidArgumentError("request body: not a JSON array of messages"),
                       400};
  }
  array_.reserve(parsed.size());
  for (auto it = parsed.rbegin(); it != parsed.rend(); ++it) {
    // A non-object element is handed on as it is: the message's parse names it.
    array_.push_back(it->dump(-1, ' ', false, nlohmann::json::error_handler_t::strict));
  }
  return std::nullopt;
}

}  // namespace adaptd::http
