// `opscope push` against a loopback server written here that reads the request as Pyroscope's
// ingest handler documents it: POST /ingest, the query parameters, multipart/form-data with the
// gzipped pprof in the part "profile" (decoded with profile.proto's generated classes). Every
// server accepts one connection and gives up after a few seconds, so no test can hang.
#include "report/push.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>

#include "base/http.h"
#include "base/strings.h"
#include "profile/profile_io.h"
#include "report/pprof_encode.h"
#include "report/profile.pb.h"

namespace opscope::report {
namespace {

struct Request {
  std::string line, body;
  std::map<std::string, std::string> headers;  // lower-case names
};

// One HTTP/1.1 server on 127.0.0.1, for one request: replies `reply` (nothing when empty: the
// client then times out), within `limit_ms`.
class LoopbackServer {
 public:
  LoopbackServer(std::string reply, int limit_ms = 5000) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 1);
    thread_ = std::thread([this, limit_ms] { Serve(limit_ms); });
  }
  ~LoopbackServer() {
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  const Request& request() {
    if (thread_.joinable()) thread_.join();
    return req_;
  }

 private:
  void Serve(int limit_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, limit_ms) <= 0) return;
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    std::string data;
    char buf[65536];
    size_t need = std::string::npos;
    while (data.size() < need) {
      pollfd q{c, POLLIN, 0};
      if (poll(&q, 1, limit_ms) <= 0) break;
      const ssize_t r = recv(c, buf, sizeof buf, 0);
      if (r <= 0) break;
      data.append(buf, static_cast<size_t>(r));
      const size_t end = data.find("\r\n\r\n");
      if (end != std::string::npos && need == std::string::npos) {
        for (const std::string& h : Split(data.substr(0, end), '\n')) {
          const size_t colon = h.find(':');
          if (colon == std::string::npos) {
            req_.line = Trim(h);
            continue;
          }
          std::string k = h.substr(0, colon);
          for (char& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          req_.headers[k] = Trim(h.substr(colon + 1));
        }
        int64_t n = 0;
        ParseInt64(req_.headers["content-length"], &n);
        need = end + 4 + static_cast<size_t>(n);
      }
    }
    if (need != std::string::npos && data.size() >= need)
      req_.body = data.substr(data.find("\r\n\r\n") + 4);
    if (!reply_.empty())
      send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
    else {
      pollfd q{c, POLLIN, 0};
      poll(&q, 1, limit_ms);  // hold the connection open, answering nothing
    }
    close(c);
  }

  std::string reply_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
  Request req_;
};

const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

std::string Decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> Query(const std::string& line) {
  std::map<std::string, std::string> q;
  const size_t at = line.find('?'), end = line.find(' ', at);
  for (const std::string& kv : Split(line.substr(at + 1, end - at - 1), '&')) {
    const size_t eq = kv.find('=');
    q[kv.substr(0, eq)] = Decode(kv.substr(eq + 1));
  }
  return q;
}

// The part named `name` of a multipart/form-data body.
std::string Part(const Request& r, const std::string& name) {
  const std::string ct = r.headers.at("content-type");
  const std::string boundary = "--" + ct.substr(ct.find("boundary=") + 9);
  size_t at = 0;
  while ((at = r.body.find(boundary, at)) != std::string::npos) {
    at += boundary.size();
    const size_t head_end = r.body.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    const std::string head = r.body.substr(at, head_end - at);
    const size_t next = r.body.find("\r\n" + boundary, head_end);
    if (head.find("name=\"" + name + "\"") != std::string::npos && next != std::string::npos)
      return r.body.substr(head_end + 4, next - head_end - 4);
  }
  return "";
}

profile::Profile Small() {
  auto p =
      profile::LoadProfile(std::string(OPSCOPE_SOURCE_DIR) + "/src/report/testdata/small.json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

TEST(Push, PyroscopeIngestAsItsHandlerReadsIt) {
  LoopbackServer server(kOk);
  PushOptions o;
  o.labels = {{"commit", "abc123"}, {"device", "orin nx,{x}"}};
  o.tenant = "team-a";
  std::string said;
  ASSERT_TRUE(PushToPyroscope(Small(), server.url("/"), o, &said).ok());
  const Request& r = server.request();
  EXPECT_EQ(r.line.rfind("POST /ingest?", 0), 0u) << r.line;
  EXPECT_NE(r.line.find(" HTTP/1.1"), std::string::npos);
  auto q = Query(r.line);
  EXPECT_EQ(q["name"],
            "opscope{kind=profile,model=small.onnx,host=" + PyroscopeLabel(Small().meta.host) +
                ",cpu=" + PyroscopeLabel(Small().meta.cpu_model) +
                ",commit=abc123,device=orin_nx__x_}");
  EXPECT_EQ(q["format"], "pprof");
  EXPECT_EQ(q["spyName"], "opscope");
  int64_t from = 0, until = 0;
  ASSERT_TRUE(ParseInt64(q["from"], &from) && ParseInt64(q["until"], &until));
  EXPECT_LT(from, until);
  EXPECT_EQ(r.headers.at("x-scope-orgid"), "team-a");
  EXPECT_EQ(r.headers.at("content-type").rfind("multipart/form-data; boundary=", 0), 0u);
  // The part is the gzipped pprof of the op profile: full node names, time in nanoseconds.
  auto raw = Gunzip(Part(r, "profile"));
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  perftools::profiles::Profile pb;
  ASSERT_TRUE(pb.ParseFromString(*raw));
  EXPECT_GT(pb.sample_size(), 0);
  bool conv = false;
  for (const auto& s : pb.string_table()) conv = conv || s == "conv1";
  EXPECT_TRUE(conv);
  EXPECT_NE(said.find("as opscope{kind=profile"), std::string::npos) << said;
}

TEST(Push, PrefixErrorsAndRefusals) {
  {  // A collector behind a path prefix, answering 400 with a reason.
    LoopbackServer server(
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 22\r\n\r\ninvalid profile\nformat");
    std::string said;
    Status st = PushToPyroscope(Small(), server.url("/pyroscope/"), PushOptions{}, &said);
    EXPECT_EQ(server.request().line.rfind("POST /pyroscope/ingest?", 0), 0u)
        << server.request().line;
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("Pyroscope answered 400 Bad Request: invalid profile format"),
              std::string::npos)
        << st.message();
  }
  {  // A server that never answers: the client gives up at its timeout.
    LoopbackServer server("", 3000);
    PushOptions o;
    o.timeout_s = 0.3;
    Status st = PushToPyroscope(Small(), server.url(), o, nullptr);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("timed out"), std::string::npos) << st.message();
  }
  // Nothing a pprof profile can hold: a profile with neither samples nor timed ops.
  profile::Profile stat;
  stat.meta.kind = "stat";
  Status none = PushToPyroscope(stat, "http://127.0.0.1:9/", PushOptions{}, nullptr);
  EXPECT_NE(none.message().find("nothing to push"), std::string::npos) << none.message();
  EXPECT_NE(PushToPyroscope(Small(), "https://pyroscope.example/", PushOptions{}, nullptr)
                .message()
                .find("https is not supported"),
            std::string::npos);
  EXPECT_FALSE(ParseHttpUrl("ftp://x").ok());
  EXPECT_FALSE(ParseHttpUrl("http://host:99999/").ok());
  EXPECT_FALSE(ParseHttpUrl("http://user:pw@host/").ok());
  EXPECT_FALSE(ParseHttpUrl("http://host/?q=1").ok());
  auto u = ParseHttpUrl("http://[::1]:4040/p");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 4040);
  EXPECT_EQ(u->path, "/p");
  EXPECT_EQ(UrlEncode("a{b=c,d}"), "a%7Bb%3Dc%2Cd%7D");
}

}  // namespace
}  // namespace opscope::report
