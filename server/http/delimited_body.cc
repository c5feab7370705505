#include "server/http/delimited_body.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace adaptd::http {
namespace {

// A varint's bytes: at most 10 for 64 bits.
constexpr size_t kMaxVarintBytes = 10;

BodyRefusal Malformed(size_t index, size_t at, absl::string_view what) {
  return {absl::InvalidArgumentError(absl::StrCat(
              "request body, message ", index, " (byte ", at, "): ", what,
              "; the body is length-delimited adapt.v1.StoreChunk messages (each a varint "
              "length, then the message), as ExportStore writes them")),
          400};
}

}  // namespace

void AppendDelimited(const google::protobuf::MessageLite& message, std::string* out) {
  uint64_t size = message.ByteSizeLong();
  do {
    const auto low = static_cast<char>(size & 0x7f);
    size >>= 7;
    out->push_back(size != 0 ? static_cast<char>(low | 0x80) : low);
  } while (size != 0);
  message.AppendToString(out);
}

std::optional<BodyRefusal> DelimitedBody::ReadMore(bool* more) {
  *more = false;
  size_t got = 0;
  if (auto refused = ReadPiece(read_, &buffer_, &ended_, &got)) return refused;
  if (got == 0) return std::nullopt;
  if (offset_ > 0) {  // what was handed out is dropped before the buffer grows
    pending_.erase(0, offset_);
    offset_ = 0;
  }
  pending_.append(buffer_.data(), got);
  read_bytes_ += got;
  *more = true;
  return std::nullopt;
}

std::optional<BodyRefusal> DelimitedBody::Next(std::string* message, bool* got) {
  *got = false;
  const size_t index = messages_ + 1;
  // The length: a varint, read once its last byte (no continuation bit) has arrived.
  uint64_t length = 0;
  size_t varint_bytes = 0;
  for (;;) {
    bool whole = false;
    length = 0;
    for (size_t i = 0; i < available() && i < kMaxVarintBytes; ++i) {
      const auto byte = static_cast<uint8_t>(pending_[offset_ + i]);
      length |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) {
        varint_bytes = i + 1;
        whole = true;
        break;
      }
    }
    const size_t at = read_bytes_ - available();
    if (whole) break;
    if (available() >= kMaxVarintBytes) return Malformed(index, at, "its length is not a varint");
    bool more = false;
    if (auto refused = ReadMore(&more)) return refused;
    if (!more) {
      if (available() == 0) return std::nullopt;  // the end, between two messages
      return Malformed(index, read_bytes_ - available(),
                       "the body ends inside its length (a truncated upload?)");
    }
  }
  const size_t at = read_bytes_ - available();
  if (length > max_message_bytes_) {
    return BodyRefusal{
        absl::ResourceExhaustedError(absl::StrCat(
            "request body, message ", index, " (byte ", at, "): ", length, " bytes, larger than ",
            max_message_bytes_, " bytes, the server's --max-message-bytes")),
        413};
  }
  while (available() < varint_bytes + length) {
    bool more = false;
    if (auto refused = ReadMore(&more)) return refused;
    if (!more) {
      return Malformed(index, at,
                       absl::StrCat("the body ends after ", available() - varint_bytes, " of its ",
                                    length, " bytes (a truncated upload?)"));
    }
  }
  message->assign(pending_, offset_ + varint_bytes, length);
  offset_ += varint_bytes + length;
  messages_ = index;
  *got = true;
  return std::nullopt;
}

}  // namespace adaptd::http
