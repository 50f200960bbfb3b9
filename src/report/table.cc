// The "table" format: the terminal table of every section the profile holds, the primary one
// first (report/format.h).
#include "report/format.h"

namespace opscope::report {
namespace {

Status WriteTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  return RenderTables(p, o, out);
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(table, {"table", ".txt",
                                "the terminal tables of every section (the default)", &WriteTable});
}  // namespace opscope::report
