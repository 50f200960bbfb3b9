#include "report/folded_stacks.h"

#include <cstdio>
#include <map>
#include <unordered_map>

#include "base/strings.h"
#include "report/format.h"
#include "report/op_stacks.h"
#include "report/say.h"

namespace opscope::report {
namespace {
// ';' separates frames and the last ' ' the count: both must not appear inside a frame label.
std::string Clean(const std::string& raw) {
  std::string s = ToValidUtf8(raw);
  for (char& c : s)
    if (c == ';' || c == '\n' || c == '\r') c = ':';
  return s;
}
}  // namespace

std::string RenderFolded(const profile::Profile& p, SampleGroup group) {
  if (!p.samples) return "";
  const auto& sec = *p.samples;
  std::vector<std::string> labels;
  labels.reserve(sec.frames.size());
  for (const auto& f : sec.frames) labels.push_back(Clean(FrameLabel(f)));
  std::map<std::string, uint64_t> counts;
  const bool grouped = group == SampleGroup::kThread || group == SampleGroup::kOp;
  const bool op_time = sec.event == kOpTimeEvent;
  std::string line;
  for (const auto& s : sec.samples) {
    line.clear();
    if (grouped) line = Clean(SampleGroupLabel(p, s, group));
    for (size_t k = s.stack.size(); k-- > 0;) {
      if (!line.empty()) line += ';';
      line += labels[s.stack[k]];
    }
    if (line.empty()) line = "[no stack]";
    // Samples count one each; op stacks count their time in microseconds.
    counts[line] += op_time ? static_cast<uint64_t>(s.weight / 1000 + 0.5) : 1;
  }
  std::string out;
  for (const auto& [stack, n] : counts) {
    out += stack;
    out += ' ';
    out += std::to_string(n);
    out += '\n';
  }
  return out;
}

namespace {

void SampleWarnings(const profile::Profile& p) {
  // The formats without a place for them: the warnings of a damaged or unfinished recording.
  if (p.samples)
    for (const auto& w : p.samples->warnings) Say("warning", w);
}

Status WriteFolded(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  SampleWarnings(p);
  profile::Profile storage;
  *out = RenderFolded(WithOpStacks(p, &storage), o.samples.group);
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(folded,
                        {.name = "folded",
                         .extension = ".folded",
                         .description = "folded stacks (FlameGraph, speedscope, inferno); op "
                                        "scopes by time in us when there are no samples",
                         .write = &WriteFolded,
                         .needs = "samples ops"});

}  // namespace opscope::report
