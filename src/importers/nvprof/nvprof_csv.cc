// nvprof's CSV output (JetPack 4 era Jetsons, CUDA <= 10): `nvprof --csv --log-file F ./app`
// (the summary) and `nvprof --csv --print-gpu-trace --log-file F ./app` (every kernel and copy).
//
//   ==1234== Profiling result:
//   "Type","Time(%)","Time","Calls","Avg","Min","Max","Name"
//   ,%,ms,,us,us,ms,
//   "GPU activities",45.1,12.3,100,123.4,110.1,0.15,"void conv_kernel(float*, int)"
//   "API calls",60.0,100.0,3,33.3,1.0,90.0,"cudaMalloc"
//
//   "Start","Duration","Grid X",...,"Size","Throughput","SrcMemType","DstMemType","Device",
//   "Context","Stream","Name","Correlation_ID"
//   ms,us,,,,,,,,KB,B,MB,GB/s,,,,,,,
//   1.23,12.3,128,1,1,256,1,1,32,0,0,,,,,"Tesla K80 (0)","1","7","conv_kernel(float*, int)
//   [115]",115
//
// The second line of each table gives the unit of every column; values are converted with it.
// Without --csv nvprof prints the summary as text (what people paste into issues), each time
// with its unit, continuation rows under the same Type:
//
//   ==1234== Profiling result:
//               Type  Time(%)      Time     Calls       Avg       Min       Max  Name
//    GPU activities:   45.12%  12.345ms       100  123.45us  110.10us  150.00us  conv_kernel(...)
//                      10.00%  2.7360ms         1  2.7360ms  2.7360ms  2.7360ms  [CUDA memcpy HtoD]
//         API calls:   60.00%  100.00ms         3  33.333ms  1.0000us  90.000ms  cudaMalloc
//
// and that text is read too (older releases have no Type column there either).
// Older releases have no "Type" column in the summary. The summary becomes one row per GPU
// activity (its total time; nvprof keeps no per-run split); the trace becomes the gpu section.
#include <cctype>
#include <cmath>
#include <map>

#include "base/strings.h"
#include "importers/csv.h"
#include "importers/gpu_rows.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

// "Time(%)      Time     Calls       Avg       Min       Max  Name": the text summary's header.
bool IsTextSummaryHeader(std::string_view line) {
  std::vector<std::string> w = Split(line, ' ', true);
  if (!w.empty() && w[0] == "Type") w.erase(w.begin());
  return w == std::vector<std::string>{"Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name"};
}

int Sniff(std::string_view head, const std::string&) {
  if (head.find("Profiling result:") != std::string_view::npos &&
      head.find("Time(%)") != std::string_view::npos &&
      head.find("\"Time(%)\"") == std::string_view::npos &&
      (head.find("GPU activities:") != std::string_view::npos ||
       head.find("  Calls  ") != std::string_view::npos))
    return kSniffCertain;  // the text summary
  bool nvprof = head.find("==PROF== ") != std::string_view::npos ||
                (head.find("==") != std::string_view::npos &&
                 head.find("NVPROF is profiling") != std::string_view::npos);
  bool summary = head.find("\"Time(%)\",\"Time\",\"Calls\"") != std::string_view::npos;
  bool trace = head.find("\"Start\",\"Duration\"") != std::string_view::npos;
  if (summary || trace) return kSniffCertain;
  if (nvprof) return kSniffLikely;
  return kSniffNo;
}

// Factor to milliseconds / bytes for a unit cell.
double TimeScale(const std::string& u) {
  if (u == "s") return 1e3;
  if (u == "ms") return 1;
  if (u == "us") return 1e-3;
  if (u == "ns") return 1e-6;
  return std::nan("");
}
double SizeScale(const std::string& u) {
  if (u == "B") return 1;
  if (u == "KB") return 1024;
  if (u == "MB") return 1024.0 * 1024;
  if (u == "GB") return 1024.0 * 1024 * 1024;
  return std::nan("");
}

// "1.72898s", "61.398us", "136.00ns" -> ms (NaN when not a time).
double TextTimeMs(const std::string& v) {
  size_t u = v.find_first_not_of("0123456789.eE+-");
  if (u == 0 || u == std::string::npos) return std::nan("");
  double x = 0;
  if (!ParseDouble(v.substr(0, u), &x)) return std::nan("");
  return x * TimeScale(v.substr(u));
}

// The text summary (nvprof without --csv): GPU activity rows become ops, API calls and other
// sections are counted in a note. Returns false when the text has no such table.
StatusOr<bool> ParseTextSummary(std::string_view text, const std::string& origin,
                                profile::Profile* p) {
  bool in_table = false, found = false;
  std::string type, section = "GPU activities";
  std::map<std::string, int> skipped;
  std::map<std::string, size_t> seen;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = origin + ":" + std::to_string(line_no);
    std::string t = Trim(line);
    // Releases without a Type column print the API calls as a table of their own, under
    // "==1234== API calls:" (after "==1234== Profiling result:" for the GPU activities).
    if (StartsWith(t, "==")) {
      in_table = false;  // the next "==1234== ..." section ends the table
      if (t.find("API calls:") != std::string::npos) section = "API calls";
      if (t.find("Profiling result:") != std::string::npos) section = "GPU activities";
      continue;
    }
    if (IsTextSummaryHeader(t)) {
      in_table = found = true;
      type = section;
      continue;
    }
    if (!in_table) continue;
    if (t.empty()) {
      in_table = false;
      continue;
    }
    // "GPU activities:", "API calls:", "OpenACC (excl):": a new Type for this and later rows.
    if (size_t colon = t.find(':'); colon != std::string::npos) {
      std::string before = Trim(std::string_view(t).substr(0, colon));
      std::string after = Trim(std::string_view(t).substr(colon + 1));
      if (!before.empty() && !std::isdigit(static_cast<unsigned char>(before[0])) &&
          before.find('%') == std::string::npos && !after.empty() &&
          std::isdigit(static_cast<unsigned char>(after[0]))) {
        type = before;
        t = after;
      }
    }
    std::vector<std::string> w = Split(t, ' ', true);
    if (w.size() < 7 || w[0].empty() || w[0].back() != '%')
      return DataLoss(where + ": not a row of the nvprof summary (expected Time(%), Time, Calls, " +
                      "Avg, Min, Max and a Name; truncated or edited output?)");
    if (type != "GPU activities") {
      ++skipped[type];
      continue;
    }
    const double total = TextTimeMs(w[1]), avg = TextTimeMs(w[3]);
    int64_t calls = 0;
    if (!std::isfinite(total) || !std::isfinite(avg) || !ParseInt64(w[2], &calls) || calls < 0)
      return DataLoss(where + ": Time '" + w[1] + "', Calls '" + w[2] + "' or Avg '" + w[3] +
                      "' is not a time with its unit (s, ms, us, ns) or a count");
    OPSCOPE_RETURN_IF_ERROR(util::CheckTime(total, where, "Time"));
    std::string name = w[6];
    for (size_t i = 7; i < w.size(); ++i) name += " " + w[i];
    if (seen.count(name)) continue;
    seen[name] = p->ops.size();
    p->ops.push_back(GpuTotalOp(
        name, static_cast<int>(p->ops.size()), total,
        "nvprof total over " + std::to_string(calls) + " calls (average " + HumanMs(avg) + ")"));
  }
  if (!found) return false;
  std::vector<std::string> notes;
  for (const auto& [what, n] : skipped) notes.push_back(what + " (" + std::to_string(n) + " rows)");
  if (!notes.empty())
    p->meta.degradations.push_back("rows that are not GPU activities were skipped: " +
                                   Join(notes, ", "));
  return true;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  profile::Profile p = util::NewProfile("nvprof", origin);
  std::vector<std::string> header, units;
  // kApiTrace: --print-api-trace ("Start","Duration","Name","Correlation_ID": host calls).
  enum class Table { kNone, kSummary, kTrace, kApiTrace } table = Table::kNone;
  bool saw_table = false;
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // a BOM
  bool after_header = false;  // the record right after a header: the units row, if any
  std::map<std::string, size_t> rows_by_name;
  // Records, not lines: a quoted kernel name may hold a line break (csv.h). nvprof's own lines
  // ("==1234== ...") are free text and skipped whole.
  csv::Reader reader(text);
  std::vector<std::string> f;
  while (!reader.AtEnd()) {
    const std::string where = origin + ":" + std::to_string(reader.LineNumber());
    const std::string_view first = reader.Line();
    if (first.empty() || first[0] == '=') {
      // "==1234== Profiling result:", "==1234== Unified Memory profiling result:",
      // "======== Warning: ...": whatever table came before has ended.
      if (!first.empty()) table = Table::kNone;
      reader.SkipLine();
      continue;
    }
    const bool quoted = first[0] == '"';
    OPSCOPE_RETURN_IF_ERROR(reader.Next(&f).WithPrefix(origin));
    const bool units_row = after_header;
    after_header = false;
    if (quoted && (f[0] == "Type" || f[0] == "Time(%)" || f[0] == "Start")) {
      header = f;
      saw_table = true;
      units.clear();
      after_header = true;
      table = Table::kSummary;
      if (f[0] == "Start") {
        bool gpu = false;
        for (const std::string& h : f) gpu = gpu || h == "Grid X" || h == "Stream" || h == "Device";
        table = gpu ? Table::kTrace : Table::kApiTrace;
      }
      continue;
    }
    if (table == Table::kNone) continue;
    if (units.empty() && units_row) {
      units = f;
      units.resize(header.size());
      continue;
    }
    if (f.size() != header.size())
      return DataLoss(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                      std::to_string(header.size()) + " (truncated or corrupt CSV?)");
    units.resize(header.size());  // a table without its units row has none
    std::map<std::string, std::string> row;
    std::map<std::string, std::string> unit;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = f[i], unit[header[i]] = units[i];
    auto time_ms = [&](const char* col, double* out) -> Status {
      std::string v = row[col];
      if (v.empty()) return DataLoss(where + ": empty \"" + std::string(col) + "\"");
      double x = 0, s = TimeScale(unit[col]);
      if (!ParseDouble(v, &x))
        return DataLoss(where + ": \"" + std::string(col) + "\" '" + v + "' is not a number");
      if (!std::isfinite(s))
        return DataLoss(where + ": unknown time unit '" + unit[col] + "' for \"" + col + "\"");
      OPSCOPE_RETURN_IF_ERROR(util::CheckTime(x, where, std::string("\"") + col + "\""));
      *out = x * s;
      return Status::Ok();
    };
    auto integer = [&](const char* col) -> int64_t {
      int64_t x = 0;
      return ParseInt64(row[col], &x) && x >= 0 ? x : 0;
    };
    if (table == Table::kSummary) {
      if (row.count("Type") && row["Type"] != "GPU activities") continue;
      double total = 0, avg = 0;
      OPSCOPE_RETURN_IF_ERROR(time_ms("Time", &total));
      OPSCOPE_RETURN_IF_ERROR(time_ms("Avg", &avg));
      std::string name = row["Name"];
      if (name.empty()) return DataLoss(where + ": a row without a Name");
      if (rows_by_name.count(name)) continue;
      rows_by_name[name] = p.ops.size();
      p.ops.push_back(GpuTotalOp(
          name, static_cast<int>(p.ops.size()), total,
          "nvprof total over " + row["Calls"] + " calls (average " + HumanMs(avg) + ")"));
      continue;
    }
    // GPU trace (or the API trace).
    if (!p.gpu) p.gpu.emplace();
    double start = 0, dur = 0;
    OPSCOPE_RETURN_IF_ERROR(time_ms("Start", &start));
    OPSCOPE_RETURN_IF_ERROR(time_ms("Duration", &dur));
    if (start > 9e12 || dur > 9e12) return DataLoss(where + ": time out of range");
    const int64_t s_ns = static_cast<int64_t>(start * 1e6),
                  e_ns = s_ns + static_cast<int64_t>(dur * 1e6);
    std::string name = row["Name"];
    if (table == Table::kApiTrace) {
      profile::GpuApiCall a;
      a.name = name;
      a.api = StartsWith(name, "cu") && !StartsWith(name, "cuda") ? "driver" : "runtime";
      a.start_ns = s_ns;
      a.end_ns = e_ns;
      a.correlation_id =
          static_cast<uint32_t>(std::min<int64_t>(integer("Correlation_ID"), 1LL << 31));
      p.gpu->api_calls.push_back(std::move(a));
      continue;
    }
    int32_t stream = static_cast<int32_t>(integer("Stream"));
    uint32_t corr = static_cast<uint32_t>(integer("Correlation_ID"));
    if (StartsWith(name, "[CUDA memcpy")) {
      profile::GpuMemcpy m;
      m.kind = CopyKindFromName(name);
      double size = 0, scale = SizeScale(unit["Size"]);
      if (ParseDouble(row["Size"], &size) && std::isfinite(scale) && size >= 0 && size < 1e15)
        m.bytes = std::llround(size * scale);
      m.pageable = row["SrcMemType"] == "Pageable" || row["DstMemType"] == "Pageable";
      m.stream = stream;
      m.start_ns = s_ns;
      m.end_ns = e_ns;
      m.correlation_id = corr;
      p.gpu->memcpys.push_back(std::move(m));
    } else if (StartsWith(name, "[CUDA memset")) {
      profile::GpuMemset m;
      double size = 0, scale = SizeScale(unit["Size"]);
      if (ParseDouble(row["Size"], &size) && std::isfinite(scale) && size >= 0 && size < 1e15)
        m.bytes = std::llround(size * scale);
      m.stream = stream;
      m.start_ns = s_ns;
      m.end_ns = e_ns;
      m.correlation_id = corr;
      p.gpu->memsets.push_back(m);
    } else {
      profile::GpuKernel k;
      // "conv_kernel(float*, int) [115]": nvprof appends the launch's correlation id.
      if (size_t b = name.rfind(" ["); b != std::string::npos && name.back() == ']')
        name = name.substr(0, b);
      k.name = name;
      const char* g[3] = {"Grid X", "Grid Y", "Grid Z"};
      const char* bl[3] = {"Block X", "Block Y", "Block Z"};
      for (int a = 0; a < 3; ++a) {
        k.grid[a] = static_cast<int32_t>(std::min<int64_t>(integer(g[a]), 1 << 30));
        k.block[a] = static_cast<int32_t>(std::min<int64_t>(integer(bl[a]), 1 << 30));
      }
      k.registers_per_thread =
          static_cast<int32_t>(std::min<int64_t>(integer("Registers Per Thread"), 1 << 16));
      double smem = 0, scale = SizeScale(unit["Static SMem"]);
      if (ParseDouble(row["Static SMem"], &smem) && std::isfinite(scale) && smem >= 0 &&
          smem < 1e12)
        k.static_shared_bytes = std::llround(smem * scale);
      scale = SizeScale(unit["Dynamic SMem"]);
      if (ParseDouble(row["Dynamic SMem"], &smem) && std::isfinite(scale) && smem >= 0 &&
          smem < 1e12)
        k.dynamic_shared_bytes = std::llround(smem * scale);
      k.stream = stream;
      k.start_ns = s_ns;
      k.end_ns = e_ns;
      k.correlation_id = corr;
      if (p.gpu->device_name.empty()) p.gpu->device_name = row["Device"];
      p.gpu->kernels.push_back(std::move(k));
    }
  }
  if (!saw_table) {
    OPSCOPE_ASSIGN_OR_RETURN(bool text_summary, ParseTextSummary(text, origin, &p));
    saw_table = text_summary;
  }
  if (!saw_table)
    return DataLoss(origin +
                    ": no nvprof CSV table (\"Type\",\"Time(%)\",... or \"Start\","
                    "\"Duration\",...) and no text summary (\"Type  Time(%)  Time  Calls ...\"); "
                    "write it with nvprof --csv --log-file FILE");
  if (p.ops.empty() && (!p.gpu || (p.gpu->kernels.empty() && p.gpu->memcpys.empty() &&
                                   p.gpu->memsets.empty() && p.gpu->api_calls.empty())))
    return DataLoss(origin + ": the nvprof table has no GPU activity rows");
  if (!p.ops.empty())
    p.meta.degradations.push_back(
        "an nvprof summary holds totals over the whole run: one value "
        "per kernel, no runs (use --print-gpu-trace for the timeline)");
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_nvprof = {"nvprof", "nvprof --csv (summary or --print-gpu-trace)",
                                      Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
