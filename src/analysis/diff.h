// `opscope diff BEFORE AFTER`: what changed between two profiles of the same model (or of two
// versions of it).
//
// End-to-end: the change of the trimmed mean with a 95% confidence interval from a bootstrap over
// the per-run samples (kBootstrapResamples resamples of each side, a fixed seed, so the same
// inputs give the same interval), and the speed-up factor. Nodes are matched by name; per-node
// and per-op-type deltas use trimmed means; nodes present on one side only are "appeared" or
// "disappeared" unless a group (GroupDelta) covers them; a node whose input or output shapes differ
// is flagged. Rows are sorted by the absolute change, largest first. Ranges (from `opscope run`)
// are compared by path the same way. Op types present on one side only are "new" or "gone".
//
// Honesty: profiles of different kinds (a model profile and a `run` profile) measure different
// things; KindMismatch says so and `diff` refuses them unless forced. Different sources and
// profiles without a node in common get a note. The run counts of each side are stated, and an
// interval from fewer than kMinRunsForSolidCi runs per side is called weak (a percentile
// bootstrap of a handful of runs is narrower than the truth).
#pragma once

#include <string>
#include <vector>

#include "profile/profile.h"
#include "sections/memory/memory_diff.h"

namespace opscope::analysis {

inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x6f7073636f7065ULL;
inline constexpr size_t kMinRunsForSolidCi = 10;

struct NodeDelta {
  std::string name, op_type;
  std::string change;  // "changed", "appeared", "disappeared"
  double before_ms = 0, after_ms = 0, delta_ms = 0;
  double delta_pct = 0;  // relative to before (0 when before is 0)
  bool shape_changed = false;
  std::string shape_before, shape_after;  // outputs, "1x64x56x56"; "" when absent
};

// Layers made of the same ONNX nodes but cut differently on the two sides (TensorRT fusing
// `A + B + C` in one engine and `A + B`, `C` in another; one runtime running A, B, C as nodes and
// another as one fused layer): compared as one group, not as unrelated rows that appeared and
// disappeared. A side's layers are its rows with `source_nodes` (imports without --model), or the
// rows that share a fused `step` (imports joined to the model); groups are the connected sets of
// layers that share a node, listed when the two sides' layers differ.
struct GroupDelta {
  std::vector<std::string> before_layers, after_layers;  // layer names, in profile order
  std::vector<std::string> nodes;                        // the ONNX nodes they share, sorted
  double before_ms = 0, after_ms = 0, delta_ms = 0, delta_pct = 0;
};

struct OpTypeDelta {
  std::string op_type;
  std::string change;  // "changed", "new" (after only), "gone" (before only)
  int count_before = 0, count_after = 0;
  double before_ms = 0, after_ms = 0, delta_ms = 0, delta_pct = 0;
};

struct E2EDelta {
  bool available = false;              // both sides have per-run times
  double before_ms = 0, after_ms = 0;  // trimmed means
  double delta_pct = 0;
  size_t runs_before = 0, runs_after = 0;  // per-run samples behind the trimmed means
  bool has_ci = false;                     // both sides have >= 2 runs
  bool weak_ci = false;                    // fewer than kMinRunsForSolidCi runs on a side
  double ci_low_pct = 0, ci_high_pct = 0;
  bool significant = false;  // the CI excludes 0
  double speedup = 0;        // before / after
  std::string basis;         // "end-to-end runs" or "sum of ops" (no per-run e2e times)
};

struct ProfileDiff {
  std::string before_source, after_source;
  E2EDelta e2e;
  std::vector<NodeDelta> nodes;       // sorted by |delta_ms| descending
  std::vector<GroupDelta> groups;     // sorted by |delta_ms| descending; their layer rows are not
                                      // in `nodes` as appeared/disappeared
  std::vector<OpTypeDelta> op_types;  // sorted by |delta_ms| descending
  std::vector<NodeDelta> ranges;      // `run` profiles: by range path (op_type = domain)
  memory::MemoryDiff memory;          // both sides with a memory section (`profile`)
  std::vector<std::string> notes;     // different models/machines, missing data, ...
  std::string headline;
};

ProfileDiff DiffProfiles(const profile::Profile& before, const profile::Profile& after);

// Why two profiles should not be compared (different kinds: "profile" vs "run", ...), or "".
std::string KindMismatch(const profile::Profile& before, const profile::Profile& after);

// Bootstrap CI of the percent change of the trimmed mean, exposed for tests.
void BootstrapChangeCi(const std::vector<double>& before, const std::vector<double>& after,
                       double* low_pct, double* high_pct);

std::string FormatDiff(const ProfileDiff& d, bool color, size_t max_rows = 25);
std::string DiffToJson(const ProfileDiff& d);

}  // namespace opscope::analysis
