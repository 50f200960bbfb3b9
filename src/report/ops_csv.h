// The ops section's CSV: one row per ONNX node, in graph order, RFC 4180 quoting; whole numbers
// as integers, other values in the shortest form that reads back exactly.
#pragma once

#include <string>

#include "report/format.h"

namespace opscope::report {

Status OpsCsv(const profile::Profile& p, const ReportOptions& o, std::string* out);

}  // namespace opscope::report
