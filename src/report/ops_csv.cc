// CSV: one row per ONNX node, in graph order; text cells through CsvText (report/format.h).
#include "report/ops_csv.h"

#include <fmt/format.h>

#include <cmath>

#include "base/strings.h"
#include "report/format.h"

namespace opscope::report {
namespace {

std::string Shapes(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<std::string> parts;
  for (const auto& s : shapes) parts.push_back(ShapeToString(s));
  return Join(parts, ";");
}

// Whole numbers (FLOPs, bytes: up to 2^53) print as integers; others in the shortest form that
// reads back as the same double.
std::string Num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

}  // namespace

Status OpsCsv(const profile::Profile& p, const ReportOptions&, std::string* out) {
  out->clear();
  *out +=
      "index,name,op_type,status,step,input_shapes,output_shapes,flops,bytes,"
      "median_ms,trimmed_mean_ms,mean_ms,min_ms,max_ms,p90_ms,stddev_ms,share,gflops_per_s,gb_per_"
      "s\n";
  for (const auto& op : p.ops) {
    double t = op.stats.median;
    double gf = t > 0 ? op.flops / (t * 1e6) : 0;
    double gb = t > 0 ? op.bytes / (t * 1e6) : 0;
    std::vector<std::string> row = {std::to_string(op.index),
                                    CsvText(op.name),
                                    CsvText(op.op_type),
                                    CsvText(profile::OpStatusName(op.status)),
                                    CsvText(op.step),
                                    Shapes(op.input_shapes),
                                    Shapes(op.output_shapes),
                                    Num(op.flops),
                                    Num(op.bytes),
                                    Num(op.stats.median),
                                    Num(op.stats.trimmed_mean),
                                    Num(op.stats.mean),
                                    Num(op.stats.min),
                                    Num(op.stats.max),
                                    Num(op.stats.p90),
                                    Num(op.stats.stddev),
                                    Num(op.share),
                                    Num(gf),
                                    Num(gb)};
    *out += Join(row, ",") + "\n";
  }
  return Status::Ok();
}

OPSCOPE_REGISTER_FORMAT(ops_csv, {.name = "ops-csv",
                                  .extension = "",
                                  .description = "one row per node (CSV)",
                                  .write = &OpsCsv,
                                  .needs = "ops"});
}  // namespace opscope::report
