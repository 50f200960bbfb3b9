#include "report/folded_stacks.h"

#include <map>
#include <unordered_map>

namespace opscope::report {
namespace {
// ';' separates frames and the last ' ' the count: both must not appear inside a frame label.
std::string Clean(std::string s) {
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
  std::string line;
  for (const auto& s : sec.samples) {
    line.clear();
    if (grouped) line = Clean(SampleGroupLabel(p, s, group));
    for (size_t k = s.stack.size(); k-- > 0;) {
      if (!line.empty()) line += ';';
      line += labels[s.stack[k]];
    }
    if (line.empty()) line = "[no stack]";
    ++counts[line];
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

}  // namespace opscope::report
