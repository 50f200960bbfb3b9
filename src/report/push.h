// `opscope push`: a profile to a continuous-profiling backend. Grafana Pyroscope's ingest API
// (POST /ingest?name=SERVICE{labels}&from=&until=&format=pprof&sampleRate=&spyName=, the gzipped
// pprof as the multipart/form-data part "profile"), over base/http.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::report {

struct PushOptions {
  std::string service = "opscope";  // Pyroscope's application name
  // Labels added to the ones taken from the profile (model, kind, host, device); a key given
  // here replaces the profile's.
  std::vector<std::pair<std::string, std::string>> labels;
  std::string tenant;  // X-Scope-OrgID, for a multi-tenant Pyroscope; "" = none
  double timeout_s = 30;
};

struct IngestRequest {
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string name;  // the `name` parameter, decoded: service{k=v,...}
};

// The Pyroscope ingest request for `p` under `base_path` ("/" or a prefix the collector is
// mounted at), with `boundary` separating the multipart parts. An error when the profile has
// nothing pprof can hold (no call-stack samples and no timed ops: a stat or gpu profile).
StatusOr<IngestRequest> BuildPyroscopeIngest(const profile::Profile& p,
                                             const std::string& base_path, const PushOptions& o,
                                             const std::string& boundary);

// Pushes `p` to the Pyroscope at `url` (http://host:port[/prefix]); `said` gets one line for the
// user ("pushed ... as NAME (N bytes)").
Status PushToPyroscope(const profile::Profile& p, const std::string& url, const PushOptions& o,
                       std::string* said);

// A label key or value as Pyroscope's name syntax allows it: characters outside
// [A-Za-z0-9_.:/-] become '_' (no ',', '=', '{' or '}' can break the name).
std::string PyroscopeLabel(const std::string& s);

}  // namespace opscope::report
