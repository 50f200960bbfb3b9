#include "collect/ranges_reader.h"

#include <algorithm>
#include <map>

#include "base/strings.h"

namespace opscope::collect {

Status ParseRangeRecords(const std::string& text, const std::string& origin,
                         std::vector<profile::Range>* out, RangeFileInfo* info) {
  std::map<uint64_t, std::string> names, domains;
  struct Raw {
    char kind;
    int64_t tid, start, end, name, domain, depth, cpu;
  };
  std::vector<Raw> raws;
  // A last line without its newline was being written when the writer died: it may parse, but
  // wrongly (a name or a number cut short), so it is never read.
  const size_t whole = text.empty() || text.back() == '\n' ? text.size() : text.rfind('\n') + 1;
  info->cut_line = whole < text.size();
  std::string line;
  int lineno = 0;
  size_t pos = 0;
  bool header = false;
  auto bad = [&](const std::string& why) {
    return DataLoss(origin + ":" + std::to_string(lineno) + ": " + why +
                    " (corrupt range file; was the program killed while writing it?)");
  };
  while (pos < whole) {
    const size_t nl = text.find('\n', pos);  // within `whole`: it ends with a newline
    line.assign(text, pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (line.empty()) continue;
    if (!header) {
      if (line != "opscope-ranges 1")
        return bad("not an opscope range file (expected 'opscope-ranges 1')");
      header = true;
      continue;
    }
    size_t sp = line.find(' ');
    std::string tag = line.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (tag == "pid") {
      int64_t v;
      if (!ParseInt64(rest, &v)) return bad("bad pid");
      info->pid = static_cast<int>(v);
    } else if (tag == "source") {
      info->source = rest;
    } else if (tag == "name" || tag == "domain") {
      size_t sp2 = rest.find(' ');
      int64_t id;
      if (sp2 == std::string::npos || !ParseInt64(rest.substr(0, sp2), &id) || id < 0)
        return bad("bad " + tag + " line");
      (tag == "name" ? names : domains)[id] = rest.substr(sp2 + 1);
    } else if (tag == "range") {
      std::vector<std::string> f = Split(rest, ' ', true);
      if (f.size() != 8 || f[0].size() != 1) return bad("range line needs 8 fields");
      Raw r{f[0][0], 0, 0, 0, 0, 0, 0, 0};
      if (r.kind != 'P' && r.kind != 'S' && r.kind != 'U')
        return bad("unknown range kind '" + f[0] + "'");
      int64_t* dst[] = {&r.tid, &r.start, &r.end, &r.name, &r.domain, &r.depth, &r.cpu};
      for (int i = 0; i < 7; ++i)
        if (!ParseInt64(f[i + 1], dst[i])) return bad("bad number '" + f[i + 1] + "'");
      if (r.end < r.start) return bad("range ends before it starts");
      raws.push_back(r);
    } else if (tag == "cut") {
      std::vector<std::string> f = Split(rest, ' ', true);
      ThreadCut c;
      int64_t tid = 0;
      if (f.size() != 3 || (f[0] != "B" && f[0] != "A") || !ParseInt64(f[1], &tid) ||
          !ParseInt64(f[2], &c.ns))
        return bad("cut line needs B|A, a thread id and a time");
      c.kind = f[0][0];
      c.tid = static_cast<int32_t>(tid);
      info->cuts.push_back(c);
    } else if (tag == "flush") {
      std::vector<std::string> f = Split(rest, ' ', true);
      int64_t ns = 0, open = 0;
      if (f.size() != 2 || !ParseInt64(f[0], &ns) || !ParseInt64(f[1], &open) || open < 0)
        return bad("flush line needs a time and a count of open ranges");
      info->last_write_ns = ns;
      info->open_at_last_write = open;
    } else if (tag == "end") {
      int64_t ns = 0;
      if (!ParseInt64(rest, &ns)) return bad("end line needs a time");
      info->complete = true;
    } else {
      return bad("unknown record '" + tag + "'");
    }
  }
  if (info->cut_line && info->complete)
    return DataLoss(origin + ": a cut line after the end record (corrupt range file)");
  if (!header) return DataLoss(origin + ": empty range file");
  for (const Raw& r : raws) {
    auto n = names.find(r.name);
    auto d = domains.find(r.domain);
    if (n == names.end())
      return DataLoss(origin + ": range refers to missing name id " + std::to_string(r.name));
    profile::Range out_r;
    out_r.name = n->second;
    out_r.domain = d == domains.end() ? "" : d->second;
    out_r.tid = static_cast<int32_t>(r.tid);
    out_r.start_ns = r.start;
    out_r.end_ns = r.end;
    if (r.cpu >= 0) out_r.counters["thread_cpu_ms"] = r.cpu / 1e6;
    if (r.kind == 'U') ++info->unclosed;
    out->push_back(std::move(out_r));
  }
  return Status::Ok();
}

Status ReadRangeFiles(const RangeFolder& folder, const std::string& prefix,
                      std::vector<profile::Range>* out, std::vector<RangeFileInfo>* infos,
                      std::vector<std::string>* refused) {
  static const std::string kHeader = "opscope-ranges 1\n";
  size_t budget = kMaxRangeBytes;
  for (const std::string& name : folder.Names()) {
    if (!StartsWith(name, prefix + ".")) continue;
    std::string text, why;
    const FileTrust trust = folder.Read(name, budget, &text, &why);
    if (trust == FileTrust::kMissing) continue;  // removed since the listing
    if (trust != FileTrust::kTrusted) {
      refused->push_back(name + " is " + why + ": not reading it" +
                         (trust == FileTrust::kTooLarge ? " (opscope reads at most 1 GiB of "
                                                          "ranges)"
                                                        : ""));
      continue;
    }
    budget -= text.size();
    RangeFileInfo info;
    info.file = name;
    if (kHeader.compare(0, text.size(), text) == 0 && text.size() < kHeader.size()) {
      info.cut_line = true;  // created, then killed before its first line was whole
      infos->push_back(info);
      continue;
    }
    OPSCOPE_RETURN_IF_ERROR(ParseRangeRecords(text, folder.path() + "/" + name, out, &info));
    infos->push_back(info);
  }
  return Status::Ok();
}

size_t DropPartialRanges(int64_t window_start, int64_t window_end,
                         const std::vector<RangeFileInfo>& infos,
                         std::vector<profile::Range>* ranges) {
  std::map<int32_t, int64_t> before, after;  // per thread: the latest B, the earliest A
  for (const auto& info : infos)
    for (const ThreadCut& c : info.cuts) {
      if (c.kind == 'B') {
        auto [it, fresh] = before.emplace(c.tid, c.ns);
        if (!fresh) it->second = std::max(it->second, c.ns);
      } else {
        auto [it, fresh] = after.emplace(c.tid, c.ns);
        if (!fresh) it->second = std::min(it->second, c.ns);
      }
    }
  // A range left out for starting before the window (recorded by the recorder that attached first,
  // before the others) takes what started inside it on its thread along, as a B cut at its end
  // would; one left out for ending after the window, as an A cut at its start.
  for (const profile::Range& r : *ranges) {
    if (r.start_ns < window_start) {
      auto [it, fresh] = before.emplace(r.tid, r.end_ns);
      if (!fresh) it->second = std::max(it->second, r.end_ns);
    }
    if (r.end_ns > window_end) {
      auto [it, fresh] = after.emplace(r.tid, r.start_ns);
      if (!fresh) it->second = std::min(it->second, r.start_ns);
    }
  }
  const size_t n = ranges->size();
  std::erase_if(*ranges, [&](const profile::Range& r) {
    if (r.start_ns < window_start || r.end_ns > window_end) return true;
    if (auto b = before.find(r.tid); b != before.end() && r.start_ns < b->second) return true;
    if (auto a = after.find(r.tid); a != after.end() && r.start_ns >= a->second) return true;
    return false;
  });
  return n - ranges->size();
}

void AssignNesting(std::vector<profile::Range>* ranges) {
  auto& v = *ranges;
  std::stable_sort(v.begin(), v.end(), [](const profile::Range& a, const profile::Range& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::vector<int32_t> stack;
  int32_t tid = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == 0 || v[i].tid != tid) {
      stack.clear();
      tid = v[i].tid;
    }
    // Sorted by start, so the stack top contains this range iff it does not end before it.
    while (!stack.empty() && v[stack.back()].end_ns < v[i].end_ns) stack.pop_back();
    v[i].parent = stack.empty() ? -1 : stack.back();
    v[i].depth = static_cast<int32_t>(stack.size());
    stack.push_back(static_cast<int32_t>(i));
  }
}

}  // namespace opscope::collect
