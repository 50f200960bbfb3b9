#include "base/http.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/strings.h"

namespace opscope {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits until `fd` is ready for `events`; false at the deadline.
bool Wait(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, RemainingMs(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

StatusOr<Url> ParseHttpUrl(const std::string& text) {
  Url u;
  std::string rest;
  if (StartsWith(text, "http://")) {
    rest = text.substr(7);
  } else if (StartsWith(text, "https://")) {
    return Unsupported(text +
                       ": https is not supported; push to an http:// endpoint (the collector in "
                       "the cluster, or a local forwarder such as Grafana Alloy's "
                       "pyroscope.receive_http)");
  } else {
    return InvalidArgument(text + ": not an http:// URL");
  }
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (u.path.find_first_of("?#") != std::string::npos)
    return InvalidArgument(text + ": give the collector's base URL, without a query");
  if (hostport.empty()) return InvalidArgument(text + ": no host");
  if (hostport.find('@') != std::string::npos)
    return InvalidArgument(text + ": credentials in the URL are not supported");
  // "host", "host:port", "[v6]", "[v6]:port".
  std::string port_text;
  if (hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string::npos) return InvalidArgument(text + ": unclosed '['");
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return InvalidArgument(text + ": bad host name");
      port_text = hostport.substr(close + 2);
    }
    hostport = hostport.substr(1, close - 1);
  } else if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    port_text = hostport.substr(colon + 1);
    hostport = hostport.substr(0, colon);
  }
  if (!port_text.empty() || hostport.empty()) {
    int64_t port = 0;
    if (!ParseInt64(port_text, &port) || port < 1 || port > 65535)
      return InvalidArgument(text + ": bad port '" + port_text + "'");
    u.port = static_cast<int>(port);
  }
  for (char c : hostport)
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '\\')
      return InvalidArgument(text + ": bad host name");
  u.host = hostport;
  return u;
}

std::string UrlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusOr<HttpReply> HttpPost(const Url& url, const std::string& target,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             const std::string& body, double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  const std::string where = url.host + ":" + std::to_string(url.port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &res);
      rc != 0)
    return Unavailable(where + ": cannot resolve the host: " + gai_strerror(rc));
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    int s = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    if (connect(s, a->ai_addr, a->ai_addrlen) == 0 ||
        (errno == EINPROGRESS && Wait(s, POLLOUT, deadline))) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        fd = s;
        break;
      }
      last_error = std::strerror(err);
    } else {
      last_error = errno == EINPROGRESS ? "timed out" : std::strerror(errno);
    }
    close(s);
  }
  freeaddrinfo(res);
  if (fd < 0) return Unavailable(where + ": cannot connect: " + last_error);
  Fd guard(fd);

  std::string request = "POST " + target + " HTTP/1.1\r\nHost: " + url.host +
                        (url.port == 80 ? "" : ":" + std::to_string(url.port)) + "\r\n";
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  request += body;
  size_t off = 0;
  while (off < request.size()) {
    if (!Wait(fd, POLLOUT, deadline)) return Unavailable(where + ": timed out sending the request");
    const ssize_t w = send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return Unavailable(where + ": send failed: " + std::strerror(errno));
    off += static_cast<size_t>(w);
  }
  std::string reply;
  char buf[8192];
  constexpr size_t kMax = 64 << 10;
  while (reply.size() < kMax) {
    if (!Wait(fd, POLLIN, deadline)) return Unavailable(where + ": timed out waiting for a reply");
    const ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return Unavailable(where + ": read failed: " + std::strerror(errno));
    if (r == 0) break;
    reply.append(buf, static_cast<size_t>(r));
  }
  // "HTTP/1.1 200 OK\r\n..."
  HttpReply out;
  const size_t eol = reply.find("\r\n");
  const std::string status_line = reply.substr(0, eol);
  const size_t sp = status_line.find(' ');
  int64_t code = 0;
  if (!StartsWith(status_line, "HTTP/1.") || sp == std::string::npos ||
      !ParseInt64(status_line.substr(sp + 1, 3), &code))
    return DataLoss(where + ": not an HTTP reply: '" + status_line.substr(0, 80) + "'");
  out.status = static_cast<int>(code);
  out.reason = sp + 5 <= status_line.size() ? status_line.substr(sp + 5) : "";
  const size_t body_at = reply.find("\r\n\r\n");
  if (body_at != std::string::npos) out.body = reply.substr(body_at + 4);
  return out;
}

}  // namespace opscope
