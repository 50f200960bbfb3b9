// debug-build: opscope itself, or the program it profiled, was built without optimisation.
#include "analysis/hygiene.h"
#include "analysis/rules.h"

namespace opscope::analysis::rules {

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const profile::Meta& m = ctx.profile.meta;
  if (!m.build_type.empty()) {
    BuildVerdict own = ClassifyBuildType(m.build_type);
    if (own.kind == "debug") {
      profile::Finding f;
      f.severity = m.kind == "profile" ? profile::Severity::kCritical : profile::Severity::kWarning;
      f.title = "opscope itself is a debug build";
      f.evidence =
          "opscope was built with " + own.evidence +
          (m.kind == "profile" ? ": the built-in engine's kernels run unoptimised, so every "
                                 "op time is inflated and the hotspots may be wrong"
                               : ": its own overhead is inflated");
      f.suggestion = "rebuild opscope with `cmake --preset release` (CMAKE_BUILD_TYPE=Release)";
      f.numbers["opscope_debug"] = 1;
      out->push_back(std::move(f));
    }
  }
  if (!m.target) return;
  const std::string& evidence = m.target->evidence;
  if (m.target->kind == "debug") {
    profile::Finding f;
    f.severity = profile::Severity::kCritical;
    f.title = "the profiled program is a debug (unoptimised) build";
    f.evidence = evidence;
    f.suggestion =
        "profile the build you ship: compile with -O2 or -O3 (CMAKE_BUILD_TYPE=Release "
        "or RelWithDebInfo to keep symbols); unoptimised code moves the hotspots";
    f.numbers["target_debug"] = 1;
    out->push_back(std::move(f));
  } else if (m.target->kind == "unknown") {
    profile::Finding f;
    f.severity = profile::Severity::kInfo;
    f.title = "the profiled program's build type is unknown";
    f.evidence = evidence;
    f.suggestion =
        "add -g to the release flags (RelWithDebInfo) so opscope can check that "
        "the program was optimised";
    out->push_back(std::move(f));
  }
}

extern const Rule kRule_debug_build = {
    "debug-build",
    "opscope's CMAKE_BUILD_TYPE is Debug/empty, or the target's DWARF producers say -O0/-Og/no -O",
    Apply};

}  // namespace opscope::analysis::rules
