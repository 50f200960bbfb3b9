#include "profile/meta.h"

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "profile/json_fields.h"
#include "profile/profile.h"
#include "profile/profile_json.h"

namespace opscope::profile {

double MachineCeilings::PeakGflops(int threads) const {
  if (threads == 1 && peak_gflops_one > 0) return peak_gflops_one;
  return peak_gflops_all > 0 ? peak_gflops_all : peak_gflops_one;
}

double MachineCeilings::PeakGopsInt8(int threads) const {
  if (threads == 1 && peak_gops_int8_one > 0) return peak_gops_int8_one;
  return peak_gops_int8_all > 0 ? peak_gops_int8_all : peak_gops_int8_one;
}

void to_json(nlohmann::json& j, const MachineCeilings& v) {
#define PUT(f) OPSCOPE_JSON_PUT(f);
  OPSCOPE_CEILING_FILE_FIELDS(PUT)
#undef PUT
  if (!v.verification.empty()) OPSCOPE_JSON_PUT(verification);
}
void from_json(const nlohmann::json& j, MachineCeilings& v) {
#define GET(f) OPSCOPE_JSON_GET(f);
  OPSCOPE_CEILING_FILE_FIELDS(GET)
#undef GET
  OPSCOPE_JSON_GET(verification);
}

#define TARGET_FIELDS(X) \
  X(path);               \
  X(kind);               \
  X(opt_level);          \
  X(evidence)
void to_json(nlohmann::json& j, const TargetBuild& v) { TARGET_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, TargetBuild& v) { TARGET_FIELDS(OPSCOPE_JSON_GET); }
#undef TARGET_FIELDS

void to_json(nlohmann::json& j, const ImportProvenance& v) {
  OPSCOPE_JSON_PUT(format);
  OPSCOPE_JSON_PUT(files);
  if (v.model.empty()) return;
  OPSCOPE_JSON_PUT(model);
  OPSCOPE_JSON_PUT(rows);
  OPSCOPE_JSON_PUT(matched_rows);
  OPSCOPE_JSON_PUT(matched_share);
  OPSCOPE_JSON_PUT(model_nodes);
  OPSCOPE_JSON_PUT(model_nodes_timed);
  OPSCOPE_JSON_PUT(unmatched);
}
void from_json(const nlohmann::json& j, ImportProvenance& v) {
  OPSCOPE_JSON_GET(format);
  OPSCOPE_JSON_GET(files);
  OPSCOPE_JSON_GET(model);
  OPSCOPE_JSON_GET(rows);
  OPSCOPE_JSON_GET(matched_rows);
  OPSCOPE_JSON_GET(matched_share);
  OPSCOPE_JSON_GET(model_nodes);
  OPSCOPE_JSON_GET(model_nodes_timed);
  OPSCOPE_JSON_GET(unmatched);
}

namespace {

// Takes extra[key] out of the map: its value, "" when absent.
std::string Take(std::map<std::string, std::string>& extra, const std::string& key,
                 bool* found = nullptr) {
  auto it = extra.find(key);
  if (found) *found = it != extra.end();
  if (it == extra.end()) return {};
  std::string v = std::move(it->second);
  extra.erase(it);
  return v;
}

// "12 of 15" → (12, 15).
void ParseOf(const std::string& s, int64_t* a, int64_t* b) {
  const size_t of = s.find(" of ");
  if (of == std::string::npos) return;
  ParseInt64(s.substr(0, of), a);
  ParseInt64(s.substr(of + 4), b);
}

}  // namespace

void UpgradeLegacyMeta(Meta* meta) {
  auto& x = meta->extra;
  bool had = false;
  if (x.count("machine.triad_gbps")) {
    MachineCeilings c;
    auto num = [&](const char* key, double* out) {
      const std::string s = Take(x, key);
      if (!s.empty()) ParseDouble(s, out);
    };
    num("machine.peak_gflops_all", &c.peak_gflops_all);
    num("machine.peak_gflops_one", &c.peak_gflops_one);
    num("machine.peak_gops_int8_all", &c.peak_gops_int8_all);
    num("machine.peak_gops_int8_one", &c.peak_gops_int8_one);
    num("machine.triad_gbps", &c.triad_gbps);
    num("machine.llc_gbps", &c.llc_gbps);
    num("machine.llc_bytes", &c.llc_bytes);
    int64_t threads = 0;
    if (ParseInt64(Take(x, "machine.threads"), &threads) && threads >= 0 && threads < (1 << 20))
      c.threads = static_cast<int>(threads);
    c.cpu_model = Take(x, "machine.cpu_model");
    c.measured_at = Take(x, "machine.measured_at");
    c.method = Take(x, "machine.method");
    c.pinned_cpus = Take(x, "machine.pinned_cpus");
    c.verification = Take(x, "machine.verification");
    if (c.Usable() && !meta->machine) meta->machine = c;
  }
  TargetBuild t;
  bool any = false;
  t.kind = Take(x, "target.build", &had);
  any = any || had;
  t.opt_level = Take(x, "target.opt_level", &had);
  any = any || had;
  t.evidence = Take(x, "target.build_evidence", &had);
  any = any || had;
  t.path = Take(x, "target.path", &had);
  any = any || had;
  if (any && !meta->target) meta->target = t;
  std::string attached = Take(x, "attached", &had);
  if (had && meta->attached.empty()) meta->attached = attached;
  if (x.count("import.format") || x.count("import.file")) {
    ImportProvenance i;
    i.format = Take(x, "import.format");
    // Several files were joined with spaces, which a path may hold too: kept as one entry.
    if (std::string f = Take(x, "import.file"); !f.empty()) i.files.push_back(f);
    i.model = Take(x, "import.model");
    ParseOf(Take(x, "import.matched_rows"), &i.matched_rows, &i.rows);
    ParseOf(Take(x, "import.model_nodes_timed"), &i.model_nodes_timed, &i.model_nodes);
    std::string share = Take(x, "import.matched_share");
    if (!share.empty() && share.back() == '%') share.pop_back();
    if (ParseDouble(share, &i.matched_share)) i.matched_share /= 100;
    const std::string unmatched = Take(x, "import.unmatched");
    if (!unmatched.empty()) i.unmatched = Split(unmatched, ',');
    for (auto& u : i.unmatched) u = std::string(Trim(u));
    if (!meta->import) meta->import = i;
  }
}

}  // namespace opscope::profile
