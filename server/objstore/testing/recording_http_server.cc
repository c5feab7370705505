#include "server/objstore/testing/recording_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace adaptd::testing_util {

RecordingHttpServer::RecordingHttpServer(std::vector<Reply> replies)
    : replies_(std::move(replies)) {
  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  listen(listener_, 16);
  thread_ = std::thread([this] { Serve(); });
}

RecordingHttpServer::~RecordingHttpServer() {
  stopping_ = true;
  thread_.join();
  close(listener_);
}

std::string RecordingHttpServer::endpoint() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

std::vector<std::string> RecordingHttpServer::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

void RecordingHttpServer::Serve() {
  while (!stopping_) {
    pollfd ready{listener_, POLLIN, 0};
    if (poll(&ready, 1, 50) <= 0) continue;
    const int connection = accept(listener_, nullptr, nullptr);
    if (connection < 0) continue;
    Answer(connection);
    close(connection);
  }
}

void RecordingHttpServer::Answer(int connection) {
  std::string received;
  size_t head_end = std::string::npos;
  size_t body_size = 0;
  char buffer[65536];
  while (head_end == std::string::npos || received.size() < head_end + 4 + body_size) {
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    received.append(buffer, static_cast<size_t>(n));
    if (head_end == std::string::npos &&
        (head_end = received.find("\r\n\r\n")) != std::string::npos) {
      const std::string head = absl::AsciiStrToLower(received.substr(0, head_end));
      const size_t field = head.find("\r\ncontent-length:");
      if (field != std::string::npos) {
        const size_t start = field + 17;
        const size_t end = head.find("\r\n", start);
        absl::SimpleAtoi(absl::StripAsciiWhitespace(head.substr(start, end - start)), &body_size);
      }
    }
  }
  size_t index;
  {
    absl::MutexLock lock(&mu_);
    index = std::min(requests_.size(), replies_.size() - 1);
    requests_.push_back(received);
  }
  const Reply& reply = replies_[index];
  const std::string answer =
      absl::StrCat("HTTP/1.1 ", reply.status, " Scripted\r\nContent-Length: ", reply.body.size(),
                   "\r\nConnection: close\r\n\r\n", reply.body);
  send(connection, answer.data(), answer.size(), MSG_NOSIGNAL);
}

}  // namespace adaptd::testing_util
