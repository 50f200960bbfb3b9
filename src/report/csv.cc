// The "csv" format: the separated values of the primary section (ops: one row per node; stat:
// `perf stat -x,` lines; ranges: one row per range path). The other sections' CSVs have their own
// names (ops-csv, stat-csv, ranges-csv).
#include "report/format.h"

namespace opscope::report {
namespace {

Status WriteCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  for (const Section* s : PresentSections(p, o))
    if (s->csv) return s->csv(p, o, out);
  return InvalidArgument(
      "the profile holds no section with a CSV form (ops, stat counters or "
      "ranges)");
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(csv,
                        {"csv", ".csv",
                         "separated values of the main section (ops, stat or ranges)", &WriteCsv});
}  // namespace opscope::report
