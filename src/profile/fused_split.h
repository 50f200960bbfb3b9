// How the time of one execution step that ran several source nodes (a fused step of opscope's
// engine, a fused TensorRT layer, an ONNX Runtime fused node) is split over those nodes: in
// proportion to their estimated cost. Shared by collect/model_profiler.cc and importers/, so a
// fused layer's time is attributed the same way whatever measured it.
//
// Chain (the anchor, then post-ops applied to its output, as in Conv+BatchNormalization+Relu):
// the anchor costs FLOPs at kSplitGflops plus bytes at kSplitGbps (a rough machine balance, used
// only here); a BatchNormalization after the anchor costs nothing (folded into the weights);
// other post-ops run in registers on the anchor's output: their FLOPs only. Region (a subgraph
// compiled as one unit, TensorRT's {ForeignNode[...]}): every node costs FLOPs plus bytes.
// When no part has a cost, the time is split evenly.
#pragma once

#include <string>
#include <vector>

namespace opscope::profile {

inline constexpr double kSplitGflops = 20;
inline constexpr double kSplitGbps = 5;

struct FusedPart {
  std::string op_type;
  double flops = 0, bytes = 0;
};

enum class FusedKind { kChain, kRegion };

// Fractions (summing to 1) of the step's time for each part, in the order given.
std::vector<double> FusedCostShares(const std::vector<FusedPart>& parts, FusedKind kind);

}  // namespace opscope::profile
