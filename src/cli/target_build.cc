#include "cli/target_build.h"

#include "collect/target_build.h"

namespace opscope::cli {

analysis::BuildVerdict RecordTargetBuild(const std::string& argv0, profile::Meta* meta) {
  auto exe = collect::ResolveExecutable(argv0);
  analysis::BuildVerdict verdict =
      exe.ok() ? analysis::ClassifyProducers(collect::ReadDwarfProducers(*exe))
               : analysis::ClassifyProducers(StatusOr<std::vector<std::string>>(exe.status()));
  analysis::BuildVerdictToMeta(verdict, exe.ok() ? *exe : std::string(), meta);
  return verdict;
}

}  // namespace opscope::cli
