#include "report/pprof_encode.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "report/format.h"
#include "report/op_stacks.h"
#include "report/profile.pb.h"
#include "report/say.h"

namespace opscope::report {
namespace {

namespace pb = perftools::profiles;

// profile.proto's string table: index 0 is "", each distinct string once.
class Strings {
 public:
  explicit Strings(pb::Profile* out) : out_(out) { Id(""); }
  int64_t Id(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, static_cast<int64_t>(ids_.size()));
    // profile.proto's strings are proto3 `string`s: decoders (Go's) refuse invalid UTF-8.
    if (inserted) out_->add_string_table(ToValidUtf8(s));
    return it->second;
  }

 private:
  pb::Profile* out_;
  std::unordered_map<std::string, int64_t> ids_;
};

// meta.created ("2026-12-01T07:35:12Z") as Unix nanoseconds; 0 when it does not parse.
int64_t CreatedNanos(const std::string& iso) {
  std::tm tm{};
  const char* end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return 0;
  time_t t = timegm(&tm);
  return t < 0 ? 0 : static_cast<int64_t>(t) * 1000000000;
}

// The program of a command line as ShellJoin wrote it: its first word, unquoted, without its
// directory ("'/opt/my app/run' -x" -> "run").
std::string ProgramOf(const std::string& command) {
  std::string word;
  size_t i = 0;
  while (i < command.size() && command[i] == ' ') ++i;
  for (bool quoted = false; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\'') {
      quoted = !quoted;
    } else if (c == ' ' && !quoted) {
      break;
    } else {
      word += c;
    }
  }
  size_t slash = word.rfind('/');
  return slash == std::string::npos ? word : word.substr(slash + 1);
}

bool IsPseudoModule(const std::string& m) { return m.empty() || m[0] == '['; }

// The sampled module pprof should show as the profile's "File:" (the first Mapping): the
// command's program when it was sampled, else the module of `main`, else the module most stacks
// start in; "[anon]", "[kernel]" and other pseudo modules only when nothing else was sampled.
std::string MainModule(const profile::Profile& p, const profile::SampleSection& sec) {
  std::set<std::string> sampled;
  for (const auto& s : sec.samples)
    for (uint32_t f : s.stack) sampled.insert(sec.frames[f].module);
  if (sampled.empty()) return "";
  const std::string program = ProgramOf(p.meta.source);
  if (!program.empty()) {
    if (sampled.count(program)) return program;
    for (const auto& m : sec.modules)
      if (sampled.count(m.name) && ProgramOf(m.path) == program) return m.name;
  }
  for (const auto& f : sec.frames)
    if (f.function == "main" && sampled.count(f.module) && !IsPseudoModule(f.module))
      return f.module;
  std::map<std::string, int64_t> roots;
  for (const auto& s : sec.samples)
    if (!s.stack.empty()) ++roots[sec.frames[s.stack.back()].module];
  std::string best;
  int64_t most = -1;
  for (const auto& [m, n] : roots)
    if (!IsPseudoModule(m) && n > most) best = m, most = n;
  if (!best.empty()) return best;
  for (const std::string& m : sampled)
    if (!IsPseudoModule(m)) return m;
  return *sampled.begin();
}

}  // namespace

std::string EncodePprof(const profile::Profile& p) {
  pb::Profile out;
  Strings str(&out);
  const profile::SampleSection empty;
  const auto& sec = p.samples ? *p.samples : empty;
  const bool cycles = sec.unit == "cycles";
  // Op stacks (op_stacks.h): the frames are scopes and nodes of the model, not code.
  const bool op_time = sec.event == kOpTimeEvent;

  auto value_type = [&](pb::ValueType* vt, const std::string& type, const std::string& unit) {
    vt->set_type(str.Id(type));
    vt->set_unit(str.Id(unit));
  };
  value_type(out.add_sample_type(), "samples", "count");
  value_type(out.add_sample_type(), cycles ? "cycles" : "cpu", cycles ? "count" : "nanoseconds");

  // Mappings. Samples: one per sampled module, the main binary first (id 1), the others by name.
  // Op stacks: one, the model.
  std::map<std::string, uint64_t> mapping_ids;  // module -> id
  std::vector<std::string> mapping_order;
  if (op_time) {
    mapping_order.push_back(p.meta.source);
  } else {
    const std::string main = MainModule(p, sec);
    std::set<std::string> sampled;
    for (const auto& s : sec.samples)
      for (uint32_t f : s.stack) sampled.insert(sec.frames[f].module);
    if (!sampled.empty()) mapping_order.push_back(main);
    for (const std::string& m : sampled)
      if (m != main) mapping_order.push_back(m);
  }
  for (const std::string& m : mapping_order) mapping_ids.emplace(m, mapping_ids.size() + 1);
  auto mapping_for = [&](const profile::Frame& f) {
    return op_time ? uint64_t{1} : mapping_ids.at(f.module);
  };

  // One Function per (name, module, file); an unknown symbol is one Function per address, named
  // by module and address, so pprof does not merge unrelated code into one "[unknown]".
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> function_ids;
  auto function_for = [&](const profile::Frame& f, const std::string& name_in) {
    std::string name = name_in;
    if (name == "[unknown]" || name.empty())
      name = fmt::format("[unknown] {}+0x{:x}", f.module.empty() ? "?" : f.module, f.address);
    auto [it, inserted] =
        function_ids.emplace(std::make_tuple(name, f.module, f.file), function_ids.size() + 1);
    if (inserted) {
      pb::Function* fn = out.add_function();
      fn->set_id(it->second);
      fn->set_name(str.Id(name));
      fn->set_system_name(str.Id(name));
      fn->set_filename(str.Id(f.file));
    }
    return it->second;
  };
  // Each mapping spans the module-relative addresses seen in it: [0, highest + 1), file offset 0,
  // so a location's address is its offset in the file (what `pprof -disasm` needs).
  std::map<uint64_t, uint64_t> mapping_limit;
  // A location is a run of frames at one PC: inlined frames followed by their physical frame;
  // keyed by its mapping, address and lines.
  using LocKey = std::tuple<uint64_t, uint64_t, std::vector<std::pair<uint64_t, int64_t>>>;
  std::map<LocKey, uint64_t> loc_ids;

  std::vector<std::pair<uint64_t, int64_t>> lines;  // function id, line; innermost first
  for (const auto& s : sec.samples) {
    pb::Sample* sm = out.add_sample();
    // Op stacks name each frame by its full scope path ("backbone.conv1", not "conv1"), so that
    // pprof's flat views (-top, -peek) do not merge nodes of different scopes that end alike.
    std::vector<std::string> paths;
    if (op_time && s.op >= 0 && s.op < static_cast<int32_t>(p.ops.size())) {
      paths = ScopePaths(p.ops[static_cast<size_t>(s.op)].name);
      std::reverse(paths.begin(), paths.end());  // leaf first, like the stack
      if (paths.size() != s.stack.size()) paths.clear();
    }
    lines.clear();
    for (size_t k = 0; k < s.stack.size(); ++k) {
      const auto& f = sec.frames[s.stack[k]];
      lines.emplace_back(function_for(f, paths.empty() ? f.function : paths[k]), f.line);
      const bool last_of_run = !f.inlined || k + 1 == s.stack.size();
      if (!last_of_run) continue;
      const uint64_t mapping = mapping_for(f);
      uint64_t& limit = mapping_limit[mapping];
      limit = std::max(limit, f.address + 1);
      auto [it, inserted] = loc_ids.emplace(LocKey{mapping, f.address, lines}, loc_ids.size() + 1);
      if (inserted) {
        pb::Location* l = out.add_location();
        l->set_id(it->second);
        l->set_mapping_id(mapping);
        l->set_address(f.address);
        for (const auto& [fn, line] : lines) {
          pb::Line* ln = l->add_line();
          ln->set_function_id(fn);
          ln->set_line(line);
        }
      }
      sm->add_location_id(it->second);
      lines.clear();
    }
    sm->add_value(1);
    sm->add_value(static_cast<int64_t>(s.weight));
    auto label_str = [&](const std::string& k, const std::string& v) {
      pb::Label* l = sm->add_label();
      l->set_key(str.Id(k));
      l->set_str(str.Id(v));
    };
    auto tn = sec.thread_names.find(s.tid);
    if (!op_time) {
      label_str("thread",
                tn != sec.thread_names.end() ? tn->second : "tid " + std::to_string(s.tid));
      pb::Label* l = sm->add_label();
      l->set_key(str.Id("tid"));
      l->set_num(s.tid);
    }
    if (s.op >= 0 && s.op < static_cast<int32_t>(p.ops.size())) {
      label_str("op", p.ops[static_cast<size_t>(s.op)].name);
      if (op_time) label_str("op_type", p.ops[static_cast<size_t>(s.op)].op_type);
    }
  }
  // The full path and build id where the recording stored them (older profiles: the name only).
  std::map<std::string, const profile::Module*> modules;
  for (const auto& m : sec.modules) modules.emplace(m.name, &m);
  for (const std::string& module : mapping_order) {
    const uint64_t id = mapping_ids.at(module);
    pb::Mapping* m = out.add_mapping();
    m->set_id(id);
    m->set_memory_start(0);
    m->set_memory_limit(mapping_limit[id]);
    m->set_file_offset(0);
    auto mod = modules.find(module);
    const bool known = mod != modules.end();
    m->set_filename(str.Id(known && !mod->second->path.empty() ? mod->second->path : module));
    if (known && !mod->second->build_id.empty()) m->set_build_id(str.Id(mod->second->build_id));
    m->set_has_functions(true);
    m->set_has_filenames(!op_time);
    m->set_has_line_numbers(!op_time);
    m->set_has_inline_frames(!op_time);
  }
  int64_t t0 = 0, t1 = 0;
  for (const auto& s : sec.samples) {
    if (t0 == 0 || s.time_ns < t0) t0 = s.time_ns;
    t1 = std::max(t1, s.time_ns);
  }
  out.set_time_nanos(CreatedNanos(p.meta.created));
  out.set_duration_nanos(t1 - t0);
  value_type(out.mutable_period_type(), cycles ? "cycles" : "cpu",
             cycles ? "count" : "nanoseconds");
  out.set_period(sec.frequency_hz > 0 && !cycles ? static_cast<int64_t>(1e9 / sec.frequency_hz)
                                                 : 0);
  out.add_comment(str.Id("opscope " + p.meta.kind + ": " + p.meta.source));
  out.set_default_sample_type(str.Id(cycles ? "cycles" : "cpu"));
  std::string bytes;
  out.SerializeToString(&bytes);
  return bytes;
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
    for (const auto& w : p.samples->warnings) Say("warning", w);
  profile::Profile storage;
  OPSCOPE_ASSIGN_OR_RETURN(*out, RenderPprof(WithOpStacks(p, &storage)));
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(pprof,
                        {.name = "pprof",
                         .extension = ".pb.gz",
                         .description = "pprof profile.proto, gzipped (go tool pprof, Pyroscope, "
                                        "Parca); op scopes by time when there are no samples",
                         .write = &WritePprof,
                         .more_extensions = ".pprof .pb",
                         .binary = true,
                         .needs = "samples ops"});

}  // namespace opscope::report
