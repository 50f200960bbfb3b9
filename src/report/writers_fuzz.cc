// Fuzz target for every output format with hostile names: the input's bytes, cut at NULs, become
// the names a profile carries (nodes, op types, steps, range names, frames, kernels, the source
// path), with a byte of the input choosing which sections the profile holds. Every registered
// format must render it without throwing or crashing, and every text format must come out as
// valid UTF-8 (JSON that parses, CSV with no cell a spreadsheet would run as a formula).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/strings.h"
#include "profile/profile.h"
#include "report/format.h"

namespace {

using opscope::profile::Profile;

Profile HostileProfile(const std::string& bytes) {
  std::vector<std::string> names = opscope::Split(bytes, '\0');
  if (names.empty()) names.push_back("");
  size_t next = 0;
  auto name = [&]() -> const std::string& { return names[next++ % names.size()]; };
  const unsigned sections = bytes.empty() ? 0xff : static_cast<unsigned char>(bytes[0]);
  Profile p;
  p.meta.kind = "profile";
  p.meta.source = name();
  p.meta.runs = 2;
  p.e2e.runs_ms = {2.0, 2.5};
  for (int i = 0; i < 3; ++i) {
    opscope::profile::OpRecord op;
    op.index = i;
    op.name = name();
    op.op_type = name();
    op.step = name();
    op.attribution = name();
    op.runs_ms = {0.5 + i, 0.6 + i};
    op.flops = 1000.0 * (i + 1);
    op.bytes = 4096;
    op.input_shapes = {{1, 3}};
    op.output_shapes = {{1, 3}};
    p.ops.push_back(op);
    p.op_events.push_back({i, 0, 7, 1000000 * i, 500000});
  }
  if (sections & 1) {
    for (int i = 0; i < 2; ++i) {
      opscope::profile::Range r;
      r.name = name();
      r.domain = name();
      r.tid = 7;
      r.start_ns = 1000 * i;
      r.end_ns = 1000 * i + 800;
      r.depth = 0;
      r.parent = -1;
      p.ranges.push_back(r);
    }
  }
  if (sections & 2) {
    opscope::profile::SampleSection s;
    s.event = "cpu-clock";
    for (int i = 0; i < 3; ++i) {
      opscope::profile::Frame f;
      f.function = name();
      f.module = name();
      s.frames.push_back(f);
    }
    opscope::profile::Sample smp;
    smp.stack = {0, 1, 2};
    smp.weight = 1;
    smp.tid = 7;
    s.samples.push_back(smp);
    s.thread_names[7] = name();
    p.samples = s;
  }
  if (sections & 4) {
    opscope::profile::GpuSection g;
    g.device_name = name();
    opscope::profile::GpuKernel k;
    k.name = name();
    k.start_ns = 100;
    k.end_ns = 900;
    g.kernels.push_back(k);
    p.gpu = g;
  }
  opscope::profile::FinalizeStats(p);
  return p;
}

// Says which format broke which rule, then aborts (what libFuzzer and the replay test catch).
[[noreturn]] void Fail(const char* format, const char* why) {
  std::fprintf(stderr, "writers_fuzz: format '%s': %s\n", format, why);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const Profile p = HostileProfile(std::string(reinterpret_cast<const char*>(data), size));
  for (const opscope::report::Format& f : opscope::report::Formats()) {
    std::string out;
    opscope::report::ReportOptions o;
    opscope::Status st;
    try {
      st = f.write(p, o, &out);
    } catch (...) {
      Fail(f.name, "threw");  // no writer may throw: the measurement would be lost
    }
    if (!st.ok() || f.binary) continue;
    if (!opscope::IsValidUtf8(out)) {
      // The first line that holds an invalid byte, for whoever reads the finding.
      for (const std::string& line : opscope::Split(out, '\n'))
        if (!opscope::IsValidUtf8(line)) {
          std::fprintf(stderr, "writers_fuzz: %s\n", opscope::ToValidUtf8(line).c_str());
          break;
        }
      Fail(f.name, "output is not valid UTF-8");
    }
    const std::string name = f.name;
    if (name == "table")
      for (unsigned char c : out)
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
          Fail(f.name, "a control character reaches the terminal");
    if (name == "json" || name == "chrome" || name == "hot-json") {
      if (nlohmann::json::parse(out, nullptr, false).is_discarded())
        Fail(f.name, "output is not JSON");
    }
    if (name == "csv" || name == "ops-csv" || name == "ranges-csv") {
      // No cell starts a formula: RFC 4180 cells (a quoted cell may hold separators and line
      // breaks), each checked at its first character.
      bool quoted = false, cell_start = true;
      for (size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        if (cell_start) {
          cell_start = false;
          const char first = c == '"' && i + 1 < out.size() ? out[i + 1] : c;
          if (first == '=' || first == '+' || first == '@') Fail(f.name, "a cell starts a formula");
        }
        if (c == '"') {
          quoted = !quoted;  // a doubled quote toggles twice
        } else if (!quoted && (c == ',' || c == '\n')) {
          cell_start = true;
        }
      }
    }
  }
  return 0;
}
