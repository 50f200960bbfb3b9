// Reports over the sampling section of a Profile: hot functions (self and inclusive), grouped by
// function, thread, module or operator, and the caller/callee view of one function.
//
// Design. Sample stacks are interned before aggregation (most samples repeat a few thousand
// distinct stacks), and every frame is mapped once to a function key (name + module), so the cost
// is one hash per sample plus work per distinct stack. Inclusive time counts a function once per
// sample even when it recurses. Percentages are of the total sample weight (ns of cpu-clock or
// cycles), not of sample counts, because frequency-mode periods vary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::report {

enum class SampleSort { kSelf, kInclusive, kName };
enum class SampleGroup { kFunction, kThread, kModule, kOp };

StatusOr<SampleSort> ParseSampleSort(const std::string& s);    // self, inclusive|incl, name
StatusOr<SampleGroup> ParseSampleGroup(const std::string& s);  // function, thread, module, op

// perf's --sort keys, comma-separated, into a sort order and a grouping: comm|pid|tid|thread
// group by thread, dso|module alone groups by module, sym|symbol|function rows are functions,
// op groups by operator; overhead|self, children|inclusive and name choose the order. Unknown
// keys are refused with the list.
Status ParseSortKeys(const std::string& keys, SampleSort* sort, SampleGroup* group);

struct SampleReportOptions {
  SampleSort sort = SampleSort::kSelf;
  SampleGroup group = SampleGroup::kFunction;
  double threshold_pct = 0.5;  // rows below this self AND inclusive share are hidden
  size_t top = 40;             // rows shown (per group for thread/op grouping); 0 = all
  bool wide = false;           // function names whole (else cut at 60 columns)
  bool children = true;        // show the inclusive ("children") column (perf's --no-children)
  std::string function;        // callers/callees of the functions matching this, instead
};

struct HotRow {
  std::string group;     // thread "name [tid]" / op name; "" when grouping by function or module
  std::string function;  // for module grouping: the module
  std::string module;
  std::string file;  // hottest source line of the function (self), else its commonest frame
  int line = 0;
  double self = 0, inclusive = 0;  // weight
  uint64_t self_samples = 0, inclusive_samples = 0;
  double self_pct = 0, inclusive_pct = 0;  // of total weight
};

struct HotFunctions {
  double total_weight = 0;
  uint64_t samples = 0;
  size_t threads = 0;
  std::vector<HotRow> rows;  // sorted, thresholded, cut to top
  size_t hidden = 0;         // rows cut by threshold or top
};

HotFunctions ComputeHotFunctions(const profile::Profile& p, const SampleReportOptions& opt);

// The terminal table (plain text; `color` adds ANSI emphasis to the hottest rows).
std::string RenderHotTable(const profile::Profile& p, const HotFunctions& h,
                           const SampleReportOptions& opt, bool color);
// The same rows as JSON (schema "opscope.report.samples/1").
std::string RenderHotJson(const profile::Profile& p, const HotFunctions& h);

// Callers and callees of the functions whose name matches `query` (exact name first, else a
// substring; several matches are reported together as one function set).
struct CallerCallee {
  std::vector<std::string> matched;  // "name (module)"
  double self_pct = 0, inclusive_pct = 0;
  struct Edge {
    std::string function, module;
    double pct = 0;  // of the function's inclusive weight
    uint64_t samples = 0;
  };
  std::vector<Edge> callers, callees;  // callees include "[self]"
};
StatusOr<CallerCallee> ComputeCallerCallee(const profile::Profile& p, const std::string& query);
std::string RenderCallerCallee(const CallerCallee& c);

// One line describing where the samples came from ("2,998 samples, cpu-clock, fp, 997 Hz, ...").
std::string DescribeSamples(const profile::Profile& p);

// Frame label used by folded stacks and flame graphs: "function" or "function [module]" when the
// function could not be named.
std::string FrameLabel(const profile::Frame& f);
// The group label of a sample (thread "comm [tid]" or op name) for the thread/op groupings.
std::string SampleGroupLabel(const profile::Profile& p, const profile::Sample& s, SampleGroup g);

}  // namespace opscope::report
