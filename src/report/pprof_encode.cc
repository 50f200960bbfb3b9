#include "report/pprof_encode.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <unordered_map>

#include "base/strings.h"
#include "report/format.h"
#include "report/op_stacks.h"

namespace opscope::report {
namespace {

// Minimal protobuf writer: varint and length-delimited fields only (all profile.proto needs).
class Pb {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      s_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    s_.push_back(static_cast<char>(v));
  }
  void Tag(int field, int wire) {
    Varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire));
  }
  void U64(int field, uint64_t v) {
    if (v == 0) return;  // proto3 default
    Tag(field, 0);
    Varint(v);
  }
  void I64(int field, int64_t v) { U64(field, static_cast<uint64_t>(v)); }
  void Bytes(int field, const std::string& b) {
    Tag(field, 2);
    Varint(b.size());
    s_ += b;
  }
  void StringAlways(int field, const std::string& b) { Bytes(field, b); }
  void Packed(int field, const std::vector<uint64_t>& vs) {
    if (vs.empty()) return;
    Pb inner;
    for (uint64_t v : vs) inner.Varint(v);
    Bytes(field, inner.s_);
  }
  void Message(int field, const Pb& m) { Bytes(field, m.s_); }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

class Strings {
 public:
  Strings() { Id(""); }
  int64_t Id(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, static_cast<int64_t>(list_.size()));
    // profile.proto's strings are proto3 `string`s: decoders (Go's) refuse invalid UTF-8.
    if (inserted) list_.push_back(ToValidUtf8(s));
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> list_;
};

// meta.created ("2026-12-01T07:35:12Z") as Unix nanoseconds; 0 when it does not parse.
int64_t CreatedNanos(const std::string& iso) {
  std::tm tm{};
  const char* end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return 0;
  time_t t = timegm(&tm);
  return t < 0 ? 0 : static_cast<int64_t>(t) * 1000000000;
}

}  // namespace

std::string EncodePprof(const profile::Profile& p) {
  Pb out;
  Strings str;
  const profile::SampleSection empty;
  const auto& sec = p.samples ? *p.samples : empty;
  const bool cycles = sec.unit == "cycles";

  auto value_type = [&](const std::string& type, const std::string& unit) {
    Pb vt;
    vt.I64(1, str.Id(type));
    vt.I64(2, str.Id(unit));
    return vt;
  };
  out.Message(1, value_type("samples", "count"));
  out.Message(1, value_type(cycles ? "cycles" : "cpu", cycles ? "count" : "nanoseconds"));

  // Mappings (one per module), functions, locations.
  std::map<std::string, uint64_t> mapping_ids;
  auto mapping_for = [&](const std::string& module) {
    auto [it, inserted] = mapping_ids.emplace(module, mapping_ids.size() + 1);
    return it->second;
  };
  // One Function per (name, module, file); an unknown symbol is one Function per address, named
  // by module and address, so pprof does not merge unrelated code into one "[unknown]".
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> function_ids;
  auto function_for = [&](const profile::Frame& f) {
    std::string name = f.function;
    if (name == "[unknown]" || name.empty())
      name = fmt::format("[unknown] {}+0x{:x}", f.module.empty() ? "?" : f.module, f.address);
    auto [it, inserted] =
        function_ids.emplace(std::make_tuple(name, f.module, f.file), function_ids.size() + 1);
    return it->second;
  };
  // Each mapping spans the module-relative addresses seen in it: [0, highest + 1), file offset 0,
  // so a location's address is its offset in the file (what `pprof -disasm` needs).
  std::map<std::string, uint64_t> mapping_limit;
  for (const auto& f : sec.frames) {
    uint64_t& lim = mapping_limit[f.module];
    lim = std::max(lim, f.address + 1);
  }
  // A location is a run of frames at one PC: inlined frames followed by their physical frame.
  struct Loc {
    uint64_t mapping, address;
    std::vector<std::pair<uint64_t, int64_t>> lines;  // function id, line; innermost first
  };
  std::map<std::vector<uint32_t>, uint64_t> loc_ids;
  std::vector<Loc> locs;

  std::vector<uint64_t> loc_stack;
  std::vector<uint32_t> run;
  for (const auto& s : sec.samples) {
    loc_stack.clear();
    run.clear();
    for (size_t k = 0; k < s.stack.size(); ++k) {
      uint32_t fid = s.stack[k];
      run.push_back(fid);
      const auto& f = sec.frames[fid];
      bool last_of_run = !f.inlined || k + 1 == s.stack.size();
      if (!last_of_run) continue;
      auto [it, inserted] = loc_ids.emplace(run, locs.size() + 1);
      if (inserted) {
        Loc l{mapping_for(f.module), f.address, {}};
        for (uint32_t r : run)
          l.lines.emplace_back(function_for(sec.frames[r]), sec.frames[r].line);
        locs.push_back(std::move(l));
      }
      loc_stack.push_back(it->second);
      run.clear();
    }
    Pb sm;
    sm.Packed(1, loc_stack);
    std::vector<uint64_t> values{1, static_cast<uint64_t>(s.weight)};
    sm.Packed(2, values);
    auto label_str = [&](const std::string& k, const std::string& v) {
      Pb l;
      l.I64(1, str.Id(k));
      l.I64(2, str.Id(v));
      sm.Message(3, l);
    };
    auto tn = sec.thread_names.find(s.tid);
    label_str("thread", tn != sec.thread_names.end() ? tn->second : "tid " + std::to_string(s.tid));
    {
      Pb l;
      l.I64(1, str.Id("tid"));
      l.I64(3, s.tid);
      sm.Message(3, l);
    }
    if (s.op >= 0 && s.op < static_cast<int32_t>(p.ops.size()))
      label_str("op", p.ops[static_cast<size_t>(s.op)].name);
    out.Message(2, sm);
  }
  // The full path and build id where the recording stored them (older profiles: the name only).
  std::map<std::string, const profile::Module*> modules;
  for (const auto& m : sec.modules) modules.emplace(m.name, &m);
  for (const auto& [module, id] : mapping_ids) {
    Pb m;
    m.U64(1, id);
    m.U64(2, 0);  // memory_start
    m.U64(3, mapping_limit[module]);
    m.U64(4, 0);  // file_offset
    auto mod = modules.find(module);
    const bool known = mod != modules.end();
    m.I64(5, str.Id(known && !mod->second->path.empty() ? mod->second->path : module));
    if (known && !mod->second->build_id.empty()) m.I64(6, str.Id(mod->second->build_id));
    m.U64(7, 1);   // has_functions
    m.U64(8, 1);   // has_filenames
    m.U64(9, 1);   // has_line_numbers
    m.U64(10, 1);  // has_inline_frames
    out.Message(3, m);
  }
  for (size_t i = 0; i < locs.size(); ++i) {
    Pb l;
    l.U64(1, i + 1);
    l.U64(2, locs[i].mapping);
    l.U64(3, locs[i].address);
    for (const auto& [fn, line] : locs[i].lines) {
      Pb ln;
      ln.U64(1, fn);
      ln.I64(2, line);
      l.Message(4, ln);
    }
    out.Message(4, l);
  }
  for (const auto& [key, id] : function_ids) {
    Pb f;
    f.U64(1, id);
    f.I64(2, str.Id(std::get<0>(key)));
    f.I64(3, str.Id(std::get<0>(key)));
    f.I64(4, str.Id(std::get<2>(key)));
    out.Message(5, f);
  }
  // period_type, period, time_nanos, duration, comments.
  int64_t t0 = 0, t1 = 0;
  for (const auto& s : sec.samples) {
    if (t0 == 0 || s.time_ns < t0) t0 = s.time_ns;
    t1 = std::max(t1, s.time_ns);
  }
  int64_t comment = str.Id("opscope " + p.meta.kind + ": " + p.meta.source);
  int64_t period =
      sec.frequency_hz > 0 && !cycles ? static_cast<int64_t>(1e9 / sec.frequency_hz) : 0;
  // string_table must come after every Id() call: build the tail first.
  Pb tail;
  tail.I64(9, CreatedNanos(p.meta.created));
  tail.I64(10, t1 - t0);
  tail.Message(11, value_type(cycles ? "cycles" : "cpu", cycles ? "count" : "nanoseconds"));
  tail.I64(12, period);
  tail.Packed(13, {static_cast<uint64_t>(comment)});
  tail.I64(14, str.Id(cycles ? "cycles" : "cpu"));
  std::string result = out.str();
  Pb strings;
  for (const auto& s : str.list()) strings.StringAlways(6, s);
  result += strings.str();
  result += tail.str();
  return result;
}

StatusOr<std::string> Gzip(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Internal("zlib: deflateInit2 failed");
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Internal("zlib: deflate failed");
  return out;
}

StatusOr<std::string> Gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Internal("zlib: inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return DataLoss("not a valid gzip stream");
    }
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

StatusOr<std::string> RenderPprof(const profile::Profile& p) { return Gzip(EncodePprof(p)); }

namespace {

Status WritePprof(const profile::Profile& p, const ReportOptions&, std::string* out) {
  if (p.samples)
    for (const auto& w : p.samples->warnings)
      std::fprintf(stderr, "opscope: warning: %s\n", w.c_str());
  profile::Profile storage;
  OPSCOPE_ASSIGN_OR_RETURN(*out, RenderPprof(WithOpStacks(p, &storage)));
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(pprof,
                        {"pprof", ".pb.gz",
                         "pprof profile.proto, gzipped (go tool pprof, Pyroscope, Parca); op "
                         "scopes by time when there are no samples",
                         &WritePprof, ".pprof .pb", /*binary=*/true});

}  // namespace opscope::report
