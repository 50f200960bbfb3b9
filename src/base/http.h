// A small HTTP/1.1 client for pushing profiles to a collector (report/push.h): one POST over a
// plain TCP connection, bounded in time, with the status and the start of the reply for errors.
// http:// only: TLS endpoints are reached through a local forwarder (Grafana Alloy's
// pyroscope.receive_http, an ingress), which is how collectors are usually fed in a cluster.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace opscope {

struct Url {
  std::string host;
  int port = 80;
  std::string path;  // "/" or more, no query
};
// "http://host[:port][/path]"; https and anything else is refused saying why.
StatusOr<Url> ParseHttpUrl(const std::string& text);

struct HttpReply {
  int status = 0;      // 200, 404, ...
  std::string reason;  // "OK"
  std::string body;    // at most the first 64 KiB
};

// POSTs `body` to url.host:url.port at `target` (path and query, already encoded) with the
// given headers (Host, Content-Length and Connection: close are added). Fails on a connection,
// write or read error or after `timeout_s` seconds in all.
StatusOr<HttpReply> HttpPost(const Url& url, const std::string& target,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             const std::string& body, double timeout_s);

// Percent-encodes everything but unreserved characters (RFC 3986), for query values.
std::string UrlEncode(const std::string& s);

}  // namespace opscope
