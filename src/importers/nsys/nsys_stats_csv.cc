// `nsys stats --format csv` reports (Nsight Systems' summaries of a capture), one or several
// tables in one file:
//
//   cuda_gpu_kern_sum (gpukernsum before 2023):
//     Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
//   cuda_gpu_mem_time_sum (gpumemtimesum): ... Count ..., Operation ("[CUDA memcpy HtoD]")
//   cuda_gpu_trace (gputrace):
//     Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),
//     DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name
//
// Columns are found by name, with the unit in the header ("(ns)", "(MB)"); older releases wrote
// "Time(%)" and "Average"/"Minimum"/"Maximum" (ns). Summary tables become rows (totals: no
// per-run split); the GPU trace fills the gpu section, like the sqlite export (nsys_sqlite.cc),
// which has more (API calls, NVTX ranges) and is the better input when available.
#include <cctype>
#include <cmath>
#include <map>

#include "base/strings.h"
#include "importers/csv.h"
#include "importers/gpu_rows.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

int Sniff(std::string_view head, const std::string&) {
  auto has = [&](std::string_view s) { return head.find(s) != std::string_view::npos; };
  if (has("Total Time (ns)") &&
      (has("Instances") || has("Count") || has("Num Calls") || has("Operations")))
    return kSniffCertain;
  if ((has("Start (ns)") && has("Duration (ns)")) || (has("Start(ns)") && has("Duration(ns)")))
    return kSniffCertain;
  return kSniffNo;
}

// "5,850,000" -> "5850000" (a number with thousands separators, as spreadsheets re-save it);
// anything else unchanged.
std::string StripThousands(std::string v) {
  if (v.find(',') == std::string::npos) return v;
  size_t dot = v.find('.');
  std::string_view whole = std::string_view(v).substr(0, dot);
  for (size_t i = 0; i < whole.size(); ++i) {
    bool sep = (whole.size() - i) % 4 == 0;
    if (sep ? whole[i] != ',' : !std::isdigit(static_cast<unsigned char>(whole[i]))) return v;
  }
  std::string out;
  for (char c : v)
    if (c != ',') out += c;
  return out;
}

// The report a title line names: " ** CUDA API Summary (cuda_api_sum):" or
// "Processing [app.sqlite] with [/opt/.../reports/cuda_api_sum.py]..." -> "cuda_api_sum".
std::string ReportName(std::string_view line) {
  std::string t = Trim(line);
  if (StartsWith(t, "**")) {
    size_t close = t.rfind(')'), open = t.rfind('(');
    if (open != std::string::npos && close != std::string::npos && open < close)
      return t.substr(open + 1, close - open - 1);
  }
  if (StartsWith(t, "Processing [")) {
    size_t py = t.rfind(".py]");
    if (py == std::string::npos) return "";
    size_t slash = t.find_last_of("/\\[", py);
    return slash == std::string::npos ? "" : t.substr(slash + 1, py - slash - 1);
  }
  return "";
}

// Column index by name, or -1. Accepts the older spellings. Every line is tried as a header,
// so the fields are compared as views: a trimmed copy of each was 16% of the fuzz target's time.
int Col(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (size_t i = 0; i < header.size(); ++i)
      if (TrimmedView(header[i]) == n) return static_cast<int>(i);
  return -1;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  profile::Profile p = util::NewProfile("nsys-stats", origin);
  // kSkip: a table read past (host API and OS runtime summaries, NVTX summaries): its rows are
  // not GPU activities. kApiTrace: cuda_api_trace (host calls, into gpu.api_calls).
  enum class Table { kNone, kSummary, kTrace, kApiTrace, kSkip } table = Table::kNone;
  std::vector<std::string> header;
  int c_total = -1, c_count = -1, c_avg = -1, c_name = -1, c_tid = -1;
  int c_start = -1, c_dur = -1, c_corr = -1, c_bytes = -1, c_strm = -1, c_grid = -1, c_block = -1,
      c_regs = -1, c_device = -1, c_src_kind = -1, c_dst_kind = -1;
  std::map<std::string, size_t> seen;
  std::map<std::string, int> skipped;  // report/table -> rows not read
  std::string report;                  // the report the last title line named
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // a BOM
  // Records, not lines: a quoted name may hold a line break (csv.h).
  csv::Reader reader(text);
  std::vector<std::string> f;
  while (!reader.AtEnd()) {
    const std::string where = origin + ":" + std::to_string(reader.LineNumber());
    if (Trim(reader.Line()).empty()) {
      reader.SkipLine();
      table = Table::kNone;  // reports are separated by blank lines
      continue;
    }
    std::string_view line;
    OPSCOPE_RETURN_IF_ERROR(reader.Next(&f, &line).WithPrefix(origin));
    if (Col(f, {"Total Time (ns)"}) >= 0) {
      header = f;
      c_total = Col(f, {"Total Time (ns)"});
      c_count = Col(f, {"Instances", "Count", "Operations", "Num Calls", "Calls"});
      c_avg = Col(f, {"Avg (ns)", "Average (ns)", "Average"});
      c_name = Col(f, {"Name", "Operation"});
      const bool host = Col(f, {"Num Calls", "Calls"}) >= 0 ||
                        report.find("api") != std::string::npos ||
                        report.find("osrt") != std::string::npos;
      const bool nvtx = Col(f, {"Range", "NVTX Range", "Kernel Name"}) >= 0 ||
                        report.find("nvtx") != std::string::npos;
      table = host || nvtx ? Table::kSkip : Table::kSummary;
      if (table == Table::kSkip) {
        skipped[report.empty() ? (host ? "API/OS runtime summary" : "NVTX summary") : report];
        continue;
      }
      if (c_name < 0) return DataLoss(where + ": a summary table without a Name/Operation column");
      continue;
    }
    if (Col(f, {"Start (ns)", "Start(ns)"}) >= 0 &&
        Col(f, {"Duration (ns)", "Duration(ns)"}) >= 0) {
      header = f;
      c_start = Col(f, {"Start (ns)", "Start(ns)"});
      c_dur = Col(f, {"Duration (ns)", "Duration(ns)"});
      c_corr = Col(f, {"CorrId", "CorrID"});
      c_bytes = Col(f, {"Bytes (MB)"});
      c_strm = Col(f, {"Strm", "Stream"});
      c_grid = Col(f, {"GrdX"});
      c_block = Col(f, {"BlkX"});
      c_regs = Col(f, {"Reg/Trd"});
      c_device = Col(f, {"Device"});
      c_src_kind = Col(f, {"SrcMemKd"});
      c_dst_kind = Col(f, {"DstMemKd"});
      c_name = Col(f, {"Name"});
      c_tid = Col(f, {"Tid", "TID"});
      if (c_name < 0) return DataLoss(where + ": a trace table without a Name column");
      if (c_grid >= 0 || c_strm >= 0 || c_dst_kind >= 0)
        table = Table::kTrace;
      else if (c_tid >= 0 || Col(f, {"Result", "Thread Name"}) >= 0)
        table = Table::kApiTrace;  // cuda_api_trace
      else
        table = Table::kSkip;  // nvtx_pushpop_trace, osrt traces, ...
      if (table == Table::kSkip) skipped[report.empty() ? "a trace table" : report];
      continue;
    }
    if (std::string r = ReportName(line); !r.empty()) {
      report = r;
      table = Table::kNone;
      continue;
    }
    if (table == Table::kNone) continue;  // "Generating SQLite file ...", "NOTICE: ...", titles
    if (f.size() != header.size()) {
      // A line that is not a data row ends the table even without the blank line
      // (" ** CUDA API Summary (cuda_api_sum):", "NOTICE: ..."); a cut row is an error.
      std::string t = Trim(line);
      const char c0 = t.empty() ? ' ' : t[0];
      if (!std::isdigit(static_cast<unsigned char>(c0)) && c0 != '"' && c0 != '-' && c0 != '.') {
        table = Table::kNone;
        continue;
      }
      return DataLoss(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                      std::to_string(header.size()) + " (truncated or corrupt CSV?)");
    }
    if (table == Table::kSkip) {
      ++skipped[report.empty() ? "a host or NVTX table" : report];
      continue;
    }
    for (std::string& x : f) x = StripThousands(Trim(x));
    auto num = [&](int col, const char* what, double* out) -> Status {
      if (col < 0) {
        *out = 0;
        return Status::Ok();
      }
      if (!ParseDouble(f[col], out))
        return DataLoss(where + ": " + what + " '" + f[col] + "' is not a number");
      return util::CheckTime(*out, where, what);
    };
    if (table == Table::kSummary) {
      double total = 0, avg = 0, count = 0;
      OPSCOPE_RETURN_IF_ERROR(num(c_total, "Total Time (ns)", &total));
      OPSCOPE_RETURN_IF_ERROR(num(c_avg, "Avg (ns)", &avg));
      OPSCOPE_RETURN_IF_ERROR(num(c_count, "Instances", &count));
      // A count, not a time: whole and at most 2^53 (found by import_nsys_stats_fuzz: 1e131
      // converted to int64, undefined behaviour).
      if (!(count >= 0 && count <= 9007199254740992.0) || count != std::floor(count))
        return DataLoss(where + ": Instances '" + f[c_count] + "' is not a count");
      std::string name = f[c_name];
      if (name.empty()) return DataLoss(where + ": a row without a name");
      if (seen.count(name)) continue;
      seen[name] = p.ops.size();
      p.ops.push_back(GpuTotalOp(name, static_cast<int>(p.ops.size()), total / 1e6,
                                 "nsys stats total over " +
                                     std::to_string(static_cast<int64_t>(count)) +
                                     " instances (average " + HumanMs(avg / 1e6) + ")"));
      continue;
    }
    double start = 0, dur = 0, corr = 0, strm = 0, bytes_mb = 0;
    OPSCOPE_RETURN_IF_ERROR(num(c_start, "Start (ns)", &start));
    OPSCOPE_RETURN_IF_ERROR(num(c_dur, "Duration (ns)", &dur));
    // start + dur must fit int64 too (4e18 ns is 126 years).
    if (start > 4e18 || dur > 4e18) return DataLoss(where + ": time out of range");
    // Optional ids: anything that is not a plain id (NaN, negative, huge) counts as absent.
    (void)num(c_corr, "CorrId", &corr);
    (void)num(c_strm, "Strm", &strm);
    if (!(corr >= 0 && corr <= 4e9)) corr = 0;
    if (!(std::abs(strm) <= 2e9)) strm = 0;
    if (!p.gpu) p.gpu.emplace();
    std::string name = f[c_name];
    if (table == Table::kApiTrace) {
      profile::GpuApiCall a;
      a.name = name;
      a.api = StartsWith(name, "cu") && !StartsWith(name, "cuda") ? "driver" : "runtime";
      double tid = 0;
      if (c_tid >= 0 && ParseDouble(f[c_tid], &tid) && tid >= 0 && tid < 2e9)
        a.tid = static_cast<int32_t>(tid);
      a.start_ns = static_cast<int64_t>(start);
      a.end_ns = a.start_ns + static_cast<int64_t>(dur);
      a.correlation_id = static_cast<uint32_t>(corr);
      p.gpu->api_calls.push_back(std::move(a));
      continue;
    }
    const int64_t s = static_cast<int64_t>(start), e = s + static_cast<int64_t>(dur);
    if (StartsWith(name, "[CUDA memcpy")) {
      profile::GpuMemcpy m;
      m.kind = CopyKindFromName(name);
      m.pageable = c_src_kind >= 0 && Trim(f[c_src_kind]) == "Pageable";
      if (c_dst_kind >= 0 && Trim(f[c_dst_kind]) == "Pageable") m.pageable = true;
      if (c_bytes >= 0 && ParseDouble(Trim(f[c_bytes]), &bytes_mb) && bytes_mb >= 0 &&
          bytes_mb < 1e9)
        m.bytes = static_cast<int64_t>(bytes_mb * 1e6);  // nsys's MB are 10^6 bytes
      m.stream = static_cast<int32_t>(strm);
      m.start_ns = s;
      m.end_ns = e;
      m.correlation_id = static_cast<uint32_t>(corr);
      p.gpu->memcpys.push_back(std::move(m));
    } else if (StartsWith(name, "[CUDA memset")) {
      profile::GpuMemset m;
      if (c_bytes >= 0 && ParseDouble(Trim(f[c_bytes]), &bytes_mb) && bytes_mb >= 0 &&
          bytes_mb < 1e9)
        m.bytes = static_cast<int64_t>(bytes_mb * 1e6);
      m.stream = static_cast<int32_t>(strm);
      m.start_ns = s;
      m.end_ns = e;
      m.correlation_id = static_cast<uint32_t>(corr);
      p.gpu->memsets.push_back(m);
    } else {
      profile::GpuKernel k;
      k.name = name;
      int64_t v = 0;
      for (int a = 0; a < 3; ++a) {
        if (c_grid >= 0 && c_grid + a < static_cast<int>(f.size()) &&
            ParseInt64(Trim(f[c_grid + a]), &v) && v >= 0 && v < (1 << 30))
          k.grid[a] = static_cast<int32_t>(v);
        if (c_block >= 0 && c_block + a < static_cast<int>(f.size()) &&
            ParseInt64(Trim(f[c_block + a]), &v) && v >= 0 && v < (1 << 30))
          k.block[a] = static_cast<int32_t>(v);
      }
      if (c_regs >= 0 && ParseInt64(Trim(f[c_regs]), &v) && v >= 0 && v < 65536)
        k.registers_per_thread = static_cast<int32_t>(v);
      k.stream = static_cast<int32_t>(strm);
      k.start_ns = s;
      k.end_ns = e;
      k.correlation_id = static_cast<uint32_t>(corr);
      if (c_device >= 0 && p.gpu->device_name.empty()) p.gpu->device_name = f[c_device];
      p.gpu->kernels.push_back(std::move(k));
    }
  }
  std::vector<std::string> skip_notes;
  for (const auto& [what, n] : skipped)
    skip_notes.push_back(what + " (" + std::to_string(n) + " rows)");
  if (p.ops.empty() && (!p.gpu || (p.gpu->kernels.empty() && p.gpu->memcpys.empty() &&
                                   p.gpu->memsets.empty() && p.gpu->api_calls.empty())))
    return DataLoss(origin +
                    ": no nsys stats table of GPU activity (cuda_gpu_kern_sum, "
                    "cuda_gpu_mem_time_sum or cuda_gpu_trace) with rows" +
                    (skip_notes.empty() ? std::string()
                                        : "; only host/NVTX tables: " + Join(skip_notes, ", ")));
  if (!skip_notes.empty())
    p.meta.degradations.push_back("tables that are not GPU activity were skipped: " +
                                  Join(skip_notes, ", "));
  if (!p.ops.empty())
    p.meta.degradations.push_back(
        "nsys stats summaries hold totals over the capture: one value "
        "per kernel, no runs (the sqlite export has the timeline)");
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_nsys_stats = {"nsys-stats", "`nsys stats --format csv` reports", Sniff,
                                          Parse};
}  // namespace formats

}  // namespace opscope::importers
