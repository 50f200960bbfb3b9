// `perf script` text (after `perf record [-g]`), into the same samples section `opscope record`
// writes, so report's hot-function tables, caller/callee view, flame graph and pprof apply.
//
// perf script's default output, one block per sample:
//   <comm> <pid>[/<tid>] [<cpu>] <secs>.<usecs>: [<period>] <event>:[ <ip> <sym>+<off> (<dso>)]
//   \t<ip> <sym>+<off> (<dso>)        one line per frame, leaf first (with -g)
//   <blank line>
// The command name may contain spaces, so the header is read from the timestamp, the first
// "<digits>.<digits>:" token. Without call graphs perf pads the command name to 16 columns
// ("%16s"), so those header lines start with spaces, like frame lines: a line is a header when
// it reads as one. `perf script -F pid,tid,time,...` leaves the command name out. Side-band
// records (`--show-mmap-events` and friends: "... PERF_RECORD_MMAP2 ...") are skipped and
// counted. Symbols may contain spaces too (demangled C++), so a frame's dso is
// the last parenthesised group. "[unknown]" stays as it is.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "base/strings.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

bool IsTimestamp(std::string_view t) {
  if (t.size() < 3 || t.back() != ':') return false;
  t.remove_suffix(1);
  size_t dot = t.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= t.size()) return false;
  for (size_t i = 0; i < t.size(); ++i)
    if (i != dot && !std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  return true;
}

std::vector<std::string_view> Tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

bool IsHex(std::string_view s) {
  if (s.empty() || s.size() > 16) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

struct Header {
  std::string comm, event;
  int32_t pid = 0, tid = 0;
  double time_s = 0, period = 1;
  std::string_view inline_frame;  // "ip sym (dso)" on the header line (no -g)
};

bool ParseHeader(std::string_view line, Header* h) {
  std::vector<std::string_view> tok = Tokens(line);
  size_t ti = 0;
  for (; ti < tok.size(); ++ti)
    if (IsTimestamp(tok[ti])) break;
  if (ti == tok.size() || ti < 1) return false;
  // Before the time: comm (maybe with spaces), pid[/tid], optional [cpu].
  size_t k = ti - 1;
  if (tok[k].size() > 2 && tok[k].front() == '[' && tok[k].back() == ']') {
    if (k == 0) return false;
    --k;
  }
  std::string_view ids = tok[k];
  size_t slash = ids.find('/');
  int64_t pid = 0, tid = 0;
  if (slash == std::string_view::npos) {
    if (!ParseInt64(ids, &tid)) return false;
    pid = tid;
  } else if (!ParseInt64(ids.substr(0, slash), &pid) || !ParseInt64(ids.substr(slash + 1), &tid)) {
    return false;
  }
  h->pid = static_cast<int32_t>(pid);
  h->tid = static_cast<int32_t>(tid);
  size_t comm_end = static_cast<size_t>(tok[k].data() - line.data());
  h->comm = Trim(line.substr(0, comm_end));
  std::string_view ts = tok[ti];
  if (!ParseDouble(ts.substr(0, ts.size() - 1), &h->time_s)) return false;
  // After the time: [period] event: [frame]
  size_t e = ti + 1;
  if (e < tok.size()) {
    int64_t period = 0;
    if (ParseInt64(tok[e], &period) && period >= 0) {
      h->period = static_cast<double>(period);
      ++e;
    }
  }
  if (e >= tok.size() || tok[e].back() != ':') return false;
  h->event = std::string(tok[e].substr(0, tok[e].size() - 1));
  size_t rest = static_cast<size_t>(tok[e].data() + tok[e].size() - line.data());
  h->inline_frame = line.substr(rest);
  return true;
}

// "  55d0c1a2b3c4 main+0x14 (/path/prog)" -> function, module, address
bool ParseFrame(std::string_view line, profile::Frame* f) {
  std::string t = Trim(line);
  if (t.empty()) return false;
  size_t sp = t.find(' ');
  std::string_view addr = std::string_view(t).substr(0, sp);
  if (!IsHex(addr)) return false;
  f->address = std::stoull(std::string(addr), nullptr, 16);
  std::string_view rest = sp == std::string::npos ? "" : std::string_view(t).substr(sp + 1);
  // `perf script --inline` marks inlined frames with a trailing "(inlined)".
  if (EndsWith(rest, " (inlined)")) {
    f->inlined = true;
    rest = rest.substr(0, rest.size() - 10);
  }
  std::string dso;
  if (!rest.empty() && rest.back() == ')') {
    int depth = 0;
    size_t open = std::string_view::npos;
    for (size_t i = rest.size(); i-- > 0;) {
      if (rest[i] == ')') ++depth;
      if (rest[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    if (open != std::string_view::npos) {
      dso = std::string(rest.substr(open + 1, rest.size() - open - 2));
      rest = rest.substr(0, open);
    }
  }
  std::string sym = Trim(rest);
  // Strip "+0x1f" (the offset in the symbol).
  size_t plus = sym.rfind("+0x");
  if (plus != std::string::npos && plus > 0 && IsHex(std::string_view(sym).substr(plus + 3)))
    sym = sym.substr(0, plus);
  f->function = sym.empty() ? "[unknown]" : sym;
  size_t base = dso.find_last_of('/');
  f->module = base == std::string::npos ? dso : dso.substr(base + 1);
  if (f->module.empty()) f->module = "[unknown]";
  return true;
}

int Sniff(std::string_view head, const std::string&) {
  // perf script --header starts with "# ========\n# captured on".
  if (StartsWith(head, "# ========") && head.find("# captured on") != std::string_view::npos)
    return kSniffCertain;
  size_t pos = 0;
  int lines = 0;
  while (pos < head.size() && lines < 64) {
    size_t nl = head.find('\n', pos);
    if (nl == std::string_view::npos) break;
    std::string_view line = head.substr(pos, nl - pos);
    pos = nl + 1;
    ++lines;
    if (line.empty() || line[0] == '#' || line.find(" PERF_RECORD_") != std::string_view::npos)
      continue;
    Header h;
    if (line[0] != '\t' && ParseHeader(line, &h)) {
      size_t nl2 = head.find('\n', pos);
      std::string_view next =
          head.substr(pos, nl2 == std::string_view::npos ? head.npos : nl2 - pos);
      profile::Frame f;
      if (!next.empty() && (next[0] == '\t' || next[0] == ' ') && ParseFrame(next, &f))
        return kSniffLikely;
      if (!h.inline_frame.empty() || next.empty()) return kSniffWeak;
    }
    return kSniffNo;
  }
  return kSniffNo;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  profile::Profile p = util::NewProfile("perf-script", origin);
  profile::SampleSection s;
  std::map<std::pair<std::string, std::string>, uint32_t> frame_ids;
  auto intern = [&](const profile::Frame& f) {
    auto [it, fresh] = frame_ids.emplace(std::make_pair(f.function, f.module),
                                         static_cast<uint32_t>(s.frames.size()));
    if (fresh) s.frames.push_back(f);
    return it->second;
  };
  std::map<std::string, size_t> events;
  profile::Sample* cur = nullptr;
  size_t pos = 0, line_no = 0, bad_lines = 0, side_band = 0;
  size_t nul_bytes = 0, nul_line = 0;  // zero-filled stretches (a file cut while being written)
  size_t released = 0;                 // the mapped pages read so far are dropped every 16 MB
  while (pos < text.size()) {
    if (pos - released > (size_t{16} << 20)) src.ReleaseBefore(released = pos);
    if (text[pos] == '\0') {
      size_t end = text.find_first_not_of('\0', pos);
      if (end == std::string_view::npos) end = text.size();
      if (nul_bytes == 0) nul_line = line_no + 1;
      nul_bytes += end - pos;
      pos = end;
      cur = nullptr;
      continue;
    }
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (size_t z = line.find('\0'); z != std::string_view::npos) {
      line = line.substr(0, z);  // the line ends where the zeros begin
      pos += z;
    } else {
      pos = nl + 1;
    }
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      cur = nullptr;
      continue;
    }
    if (line[0] == '#') continue;
    Header h;
    const bool header = line[0] != '\t' && ParseHeader(line, &h);
    if (!header && line.find(" PERF_RECORD_") != std::string_view::npos) {
      ++side_band;  // "java 215881 750014.947971: PERF_RECORD_MMAP2 215879/215895: [...]"
      cur = nullptr;
      continue;
    }
    if (!header && (line[0] == ' ' || line[0] == '\t')) {
      profile::Frame f;
      if (!cur || !ParseFrame(line, &f)) {
        ++bad_lines;
        if (!cur && s.samples.empty())
          return DataLoss(origin + ":" + std::to_string(line_no) +
                          ": a stack frame before any sample header: not perf script output");
        continue;
      }
      cur->stack.push_back(intern(f));
      continue;
    }
    if (!header) {
      if (s.samples.empty())
        return DataLoss(origin + ":" + std::to_string(line_no) +
                        ": not a perf script sample header (\"comm pid [cpu] time: period "
                        "event:\"); was the file written by `perf script`?");
      ++bad_lines;
      cur = nullptr;
      continue;
    }
    OPSCOPE_RETURN_IF_ERROR(
        util::CheckTime(h.time_s, origin + ":" + std::to_string(line_no), "sample time"));
    if (h.time_s > 9e9 || h.period > 1e18)
      return DataLoss(origin + ":" + std::to_string(line_no) +
                      ": sample time or period out of range (corrupt file?)");
    profile::Sample smp;
    smp.pid = h.pid;
    smp.tid = h.tid;
    smp.time_ns = static_cast<int64_t>(h.time_s * 1e9);
    smp.weight = h.period;
    s.thread_names.emplace(h.tid, h.comm);
    ++events[h.event];
    s.samples.push_back(std::move(smp));
    cur = &s.samples.back();
    std::string_view inl = h.inline_frame;
    profile::Frame f;
    if (!Trim(inl).empty() && ParseFrame(inl, &f)) cur->stack.push_back(intern(f));
  }
  if (s.samples.empty()) return DataLoss(origin + ": no samples in the perf script output");
  // Samples without a single frame (perf script -F without ip/sym): nothing to show.
  std::string main_event;
  size_t most = 0;
  for (const auto& [e, n] : events)
    if (n > most) most = n, main_event = e;
  if (events.size() > 1) {
    s.warnings.push_back("the file mixes " + std::to_string(events.size()) +
                         " events; weights are shown as one unit (" + main_event + ")");
  }
  // "cpu-clock:u" / "cpu-clock:ppp" -> base name
  std::string base = main_event.substr(0, main_event.find(':'));
  s.event = base;
  s.unit = (base == "cpu-clock" || base == "task-clock") ? "ns"
           : base == "cycles"                            ? "cycles"
                                                         : "events";
  s.call_graph = "perf script";
  if (side_band)
    s.warnings.push_back(std::to_string(side_band) +
                         " side-band records (PERF_RECORD_MMAP2, ...: perf script "
                         "--show-*-events) were skipped");
  if (nul_bytes)
    s.warnings.push_back(std::to_string(nul_bytes) + " NUL bytes in " + origin + " (from line " +
                         std::to_string(nul_line) +
                         ") were skipped: a zero-filled stretch, as a file cut while being "
                         "written leaves; the samples outside it were read");
  if (bad_lines)
    s.warnings.push_back(std::to_string(bad_lines) + " lines of " + origin +
                         " could not be read as samples or frames and were skipped");
  p.samples = std::move(s);
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_perf_script = {"perf-script", "`perf script` text (perf record -g)",
                                           Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
