// For the body readers' tests: a request body handed out a few bytes at a time, as a client
// sending it in pieces would.
#ifndef ADAPTD_SERVER_HTTP_CHUNKED_READER_TESTING_H_
#define ADAPTD_SERVER_HTTP_CHUNKED_READER_TESTING_H_

#include <algorithm>
#include <string>

#include "server/http/write_body.h"

namespace adaptd::http {

// A body handed out `chunk` bytes at a time.
inline BodyReader Chunked(std::string body, size_t chunk) {
  return [body = std::move(body), chunk, at = size_t{0}](char* buffer, size_t size) mutable {
    const size_t n = std::min({chunk, size, body.size() - at});
    body.copy(buffer, n, at);
    at += n;
    return static_cast<int>(n);
  };
}

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_CHUNKED_READER_TESTING_H_
