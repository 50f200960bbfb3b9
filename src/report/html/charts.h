// The larger SVG charts of the HTML report: roofline, flame graph, timeline. Each returns an
// HTML fragment (the SVG with its caption), or an explanation of why it cannot be drawn.
#pragma once

#include <string>
#include <vector>

#include "analysis/machine.h"
#include "profile/profile.h"

namespace opscope::report::html {

// Each op with FLOPs, bytes and time as a point at (FLOP/byte, achieved GFLOP/s), log-log, sized
// by time, against the ceilings when the profile carries them (Meta::extra "machine.*").
std::string RooflineSection(const profile::Profile& p);

// A frame of the flame graph: inclusive weight and children in first-seen order.
struct FlameNode {
  std::string name;
  double value = 0;
  std::vector<FlameNode> children;
  FlameNode* Child(const std::string& child_name);
};
// From call-stack samples (root first, weighted by each sample's weight) when the profile has
// them; otherwise the op hierarchy by name scope, weighted by trimmed mean time. `unit` says
// which ("ns", "cycles", "ms").
FlameNode BuildFlameTree(const profile::Profile& p, std::string* what, std::string* unit);
std::string FlameSection(const profile::Profile& p);

// Ops per thread of the representative run, the ranges and GPU kernels and copies that overlap
// it (or the whole recording for profiles without op events).
std::string TimelineSection(const profile::Profile& p);

}  // namespace opscope::report::html
