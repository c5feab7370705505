#include "bench/residency/probes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"

namespace adaptd::bench {

std::shared_ptr<grpc::Channel> FastRetryChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 5);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

bool HealthServing(grpc::Channel& channel, absl::Duration timeout) {
  // Check and its reply are one-field messages: the empty request asks about the whole server,
  // and the reply `status: SERVING` (field 1, varint 1) is the two bytes 08 01.
  grpc::GenericStub stub(std::shared_ptr<grpc::Channel>(&channel, [](grpc::Channel*) {}));
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1), response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return false;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes == std::string("\x08\x01", 2);
}

absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("metrics address: not HOST:PORT: ", host_port));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("metrics: cannot connect to ", host_port));
  }
  // HTTP/1.0: the server closes the connection after the body and sends it unchunked.
  const std::string get = "GET /metrics HTTP/1.0\r\nHost: " + host_port + "\r\n\r\n";
  std::string reply;
  bool ok = ::send(fd, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size());
  char buf[65536];
  for (ssize_t n; ok && (n = ::recv(fd, buf, sizeof(buf), 0)) != 0;) {
    if (n < 0) ok = errno == EINTR;
    if (n > 0) reply.append(buf, n);
  }
  ::close(fd);
  const size_t body = reply.find("\r\n\r\n");
  if (!ok || reply.rfind("HTTP/1.", 0) != 0 || reply.find(" 200 ") > reply.find("\r\n") ||
      body == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("metrics: no 200 reply from ", host_port, ": ", reply.substr(0, 80)));
  }
  std::map<std::string, double> samples;
  std::istringstream lines(reply.substr(body + 4));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    // Label values in this server's metrics contain no spaces: the value follows the last one.
    const size_t space = line.rfind(' ');
    double value = 0;
    if (space == std::string::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) continue;
    samples[line.substr(0, space)] = value;
  }
  return samples;
}

double MetricSum(const std::map<std::string, double>& metrics, const std::string& name) {
  return MetricSum(metrics, name, "");
}

double MetricSum(const std::map<std::string, double>& metrics, const std::string& name,
                 const std::string& label) {
  double sum = 0;
  for (auto it = metrics.lower_bound(name); it != metrics.end(); ++it) {
    const std::string& key = it->first;
    if (key.compare(0, name.size(), name) != 0) break;
    if (key.size() != name.size() && key[name.size()] != '{') continue;
    if (!label.empty() && key.find(label) == std::string::npos) continue;
    sum += it->second;
  }
  return sum;
}

}  // namespace adaptd::bench
