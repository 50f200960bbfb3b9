// Op-level stacks for profiles without call-stack samples, so folded stacks, flame graphs and
// pprof work on every profile: each op becomes one pseudo-sample "scope;...;node" weighted by its
// time per run (trimmed mean, in ns). The scope comes from the node name: ONNX exporters name
// nodes by module path ("/backbone/layer1/conv/Conv" -> backbone;layer1;conv;Conv), PyTorch-style
// names use dots ("backbone.layer1.conv" -> backbone;layer1;conv); other names are one frame.
// The section's event is "op-time" (unit "ns"); each frame's module is the op type.
#pragma once

#include <string>
#include <vector>

#include "profile/profile.h"

namespace opscope::report {

inline constexpr char kOpTimeEvent[] = "op-time";

// The scope parts of a node name, the node's own last part included.
std::vector<std::string> ScopeOf(const std::string& node_name);
// The same scopes as full paths, one per part of ScopeOf, the last the node name itself:
// "backbone.layer1.conv" -> {"backbone", "backbone.layer1", "backbone.layer1.conv"}. For the
// views that list frames by name alone (pprof -top), where "conv1" of two scopes would merge.
std::vector<std::string> ScopePaths(const std::string& node_name);

// `p` itself when it has samples; else a copy whose samples section holds the op stacks (in
// `*storage`). Folded, flame-graph and pprof writers call this first.
const profile::Profile& WithOpStacks(const profile::Profile& p, profile::Profile* storage);

}  // namespace opscope::report
