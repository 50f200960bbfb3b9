#include "profile/fused_split.h"

#include <algorithm>

namespace opscope::profile {

std::vector<double> FusedCostShares(const std::vector<FusedPart>& parts, FusedKind kind) {
  std::vector<double> w(parts.size(), 0.0);
  double sum = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const FusedPart& n = parts[k];
    const double full = n.flops / (kSplitGflops * 1e9) + n.bytes / (kSplitGbps * 1e9);
    if (kind == FusedKind::kRegion || k == 0)
      w[k] = full;
    else if (n.op_type == "BatchNormalization")
      w[k] = 0;
    else
      w[k] = n.flops / (kSplitGflops * 1e9);
    if (!(w[k] >= 0)) w[k] = 0;
    sum += w[k];
  }
  if (sum <= 0) {
    std::fill(w.begin(), w.end(), parts.empty() ? 0.0 : 1.0 / static_cast<double>(parts.size()));
    return w;
  }
  for (double& x : w) x /= sum;
  return w;
}

}  // namespace opscope::profile
