#include "report/push.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <ctime>
#include <random>

#include "base/clock.h"
#include "base/http.h"
#include "base/strings.h"
#include "report/op_stacks.h"
#include "report/pprof_encode.h"

namespace opscope::report {
namespace {

// Seconds since the epoch of an ISO 8601 UTC time "2026-12-07T10:45:21Z"; -1 if it is not one.
int64_t EpochOf(const std::string& iso) {
  tm t{};
  if (iso.size() < 19 || strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &t) == nullptr) return -1;
  return static_cast<int64_t>(timegm(&t));
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string PyroscopeLabel(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    out += std::isalnum(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-'
               ? static_cast<char>(c)
               : '_';
  return out.empty() ? "_" : out;
}

StatusOr<IngestRequest> BuildPyroscopeIngest(const profile::Profile& p,
                                             const std::string& base_path, const PushOptions& o,
                                             const std::string& boundary) {
  const bool samples = p.samples && !p.samples->samples.empty();
  bool timed_ops = false;
  for (const auto& op : p.ops) timed_ops = timed_ops || !op.runs_ms.empty();
  if (!samples && !timed_ops)
    return InvalidArgument("nothing to push: this " + p.meta.kind +
                           " profile has no call-stack samples and no timed ops, which is what a "
                           "pprof profile holds");
  profile::Profile storage;
  OPSCOPE_ASSIGN_OR_RETURN(std::string pprof, RenderPprof(WithOpStacks(p, &storage)));

  // The labels: what the profile says of itself, then the user's (which win).
  std::vector<std::pair<std::string, std::string>> labels;
  auto set = [&](const std::string& k, const std::string& v) {
    if (v.empty()) return;
    for (auto& [key, value] : labels)
      if (key == k) {
        value = v;
        return;
      }
    labels.emplace_back(k, v);
  };
  set("kind", p.meta.kind);
  if (p.meta.kind == "profile" || p.meta.import) set("model", Basename(p.meta.source));
  set("host", p.meta.host);
  set("cpu", p.meta.cpu_model);
  for (const auto& [k, v] : o.labels) set(k, v);
  std::string name = PyroscopeLabel(o.service) + "{";
  for (size_t i = 0; i < labels.size(); ++i)
    name +=
        (i ? "," : "") + PyroscopeLabel(labels[i].first) + "=" + PyroscopeLabel(labels[i].second);
  name += "}";

  // When: the profile's creation ends it; its measured runs (or one second) before that.
  int64_t until = EpochOf(p.meta.created);
  if (until < 0) until = static_cast<int64_t>(std::time(nullptr));
  double span_s = 0;
  for (double ms : p.e2e.runs_ms) span_s += ms / 1000;
  const int64_t from = until - std::max<int64_t>(1, static_cast<int64_t>(std::ceil(span_s)));
  const double rate = samples && p.samples->frequency_hz > 0 ? p.samples->frequency_hz : 100;

  IngestRequest r;
  r.name = name;
  std::string path = base_path.empty() || base_path == "/" ? "" : base_path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  r.target = path + "/ingest?name=" + UrlEncode(name) + "&from=" + std::to_string(from) +
             "&until=" + std::to_string(until) + "&format=pprof" +
             "&sampleRate=" + fmt::format("{:.0f}", rate) + "&spyName=opscope";
  r.headers.emplace_back("Content-Type", "multipart/form-data; boundary=" + boundary);
  if (!o.tenant.empty()) r.headers.emplace_back("X-Scope-OrgID", o.tenant);
  r.headers.emplace_back("User-Agent", "opscope");
  r.body = "--" + boundary +
           "\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n" +
           pprof + "\r\n--" + boundary + "--\r\n";
  return r;
}

Status PushToPyroscope(const profile::Profile& p, const std::string& url, const PushOptions& o,
                       std::string* said) {
  OPSCOPE_ASSIGN_OR_RETURN(Url u, ParseHttpUrl(url));
  std::random_device rd;
  const std::string boundary = fmt::format("opscope-{:016x}{:08x}", NowNs(), rd());
  OPSCOPE_ASSIGN_OR_RETURN(IngestRequest req, BuildPyroscopeIngest(p, u.path, o, boundary));
  OPSCOPE_ASSIGN_OR_RETURN(HttpReply reply,
                           HttpPost(u, req.target, req.headers, req.body, o.timeout_s));
  if (reply.status < 200 || reply.status >= 300) {
    std::string why = reply.body.substr(0, 300);
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    return Unavailable(fmt::format("{}: Pyroscope answered {} {}{}{}", url, reply.status,
                                   reply.reason, why.empty() ? "" : ": ", why));
  }
  if (said)
    *said = fmt::format("pushed to {} as {} ({} bytes sent, HTTP {})", url, req.name,
                        req.body.size(), reply.status);
  return Status::Ok();
}

}  // namespace opscope::report
