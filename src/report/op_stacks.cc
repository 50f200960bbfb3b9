#include "report/op_stacks.h"

#include <map>

#include "base/strings.h"

namespace opscope::report {

std::vector<std::string> ScopeOf(const std::string& node_name) {
  std::string name = node_name;
  while (!name.empty() && name[0] == '/') name.erase(0, 1);
  char sep = name.find('/') != std::string::npos   ? '/'
             : name.find('.') != std::string::npos ? '.'
                                                   : 0;
  std::vector<std::string> parts;
  if (sep) {
    for (const std::string& s : Split(name, sep, /*skip_empty=*/true)) parts.push_back(s);
  }
  if (parts.empty()) parts.push_back(node_name.empty() ? "[unnamed]" : node_name);
  return parts;
}

std::vector<std::string> ScopePaths(const std::string& node_name) {
  const size_t parts = ScopeOf(node_name).size();
  if (parts == 1) return {node_name.empty() ? "[unnamed]" : node_name};
  size_t i = node_name.find_first_not_of('/');
  const char sep = node_name.find('/', i) != std::string::npos ? '/' : '.';
  std::vector<std::string> out;
  while (out.size() + 1 < parts) {
    i = node_name.find_first_not_of(sep, i);  // empty parts are not scopes
    i = node_name.find(sep, i);
    out.push_back(node_name.substr(0, i));
  }
  out.push_back(node_name);
  return out;
}

const profile::Profile& WithOpStacks(const profile::Profile& p, profile::Profile* storage) {
  if (p.samples && !p.samples->samples.empty()) return p;
  *storage = p;
  profile::SampleSection& sec = storage->samples.emplace();
  sec.event = kOpTimeEvent;
  sec.unit = "ns";
  sec.call_graph = "op scope";
  std::map<std::pair<std::string, std::string>, uint32_t> frame_ids;  // (label, module)
  auto frame = [&](const std::string& label, const std::string& module) {
    auto [it, fresh] =
        frame_ids.emplace(std::make_pair(label, module), static_cast<uint32_t>(sec.frames.size()));
    if (fresh) {
      profile::Frame f;
      f.function = label;
      f.module = module;
      sec.frames.push_back(f);
    }
    return it->second;
  };
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const profile::OpRecord& op = p.ops[i];
    double ns = op.stats.trimmed_mean * 1e6;
    if (!(ns > 0)) continue;
    std::vector<std::string> parts = ScopeOf(op.name);
    profile::Sample s;
    // Leaf first: the node (module = its op type), then its scopes outwards.
    s.stack.push_back(frame(parts.back(), op.op_type));
    for (size_t k = parts.size() - 1; k-- > 0;) s.stack.push_back(frame(parts[k], ""));
    s.weight = ns;
    s.op = static_cast<int32_t>(i);
    sec.samples.push_back(std::move(s));
  }
  return *storage;
}

}  // namespace opscope::report
