#include "collect/symbolize.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "base/files.h"
#include "base/strings.h"
#include "collect/build_id.h"
#include "collect/perf_map.h"
#include "collect/unwind.h"

namespace opscope::collect {
namespace {

std::string Basename(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

struct Mapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  std::string file;
};

char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kOfflineCallbacks = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo,
                                          dwfl_offline_section_address, &g_debuginfo_path};

// Everything known about one process's address space.
struct Space {
  int pid = 0;
  std::vector<Mapping> maps;
  Dwfl* dwfl = nullptr;
  bool prepared = false;
  std::unique_ptr<DwarfUnwinder> unwinder;
  bool unwinder_failed = false;
  std::unique_ptr<PerfMap> jit;
  bool jit_loaded = false;
  std::unordered_map<uint64_t, std::vector<uint32_t>> cache;  // lookup pc -> frames (leaf first)
  ~Space() {
    unwinder.reset();
    if (dwfl) dwfl_end(dwfl);
  }
};

class Builder {
 public:
  explicit Builder(const RecordReader& r) : reader_(r) {}
  StatusOr<profile::SampleSection> Run();

 private:
  Space& SpaceFor(int pid) {
    auto& s = spaces_[pid];
    if (!s) {
      s = std::make_unique<Space>();
      s->pid = pid;
    }
    return *s;
  }
  void Prepare(Space& s);
  const std::vector<uint32_t>& FramesFor(Space& s, uint64_t pc);
  void Symbolize(Space& s, uint64_t pc, std::vector<profile::Frame>* out);
  uint32_t Intern(profile::Frame f);
  // Remembers a mapped file by the name its frames carry (the first path with that name wins).
  void NoteModule(const std::string& path, bool readable) {
    auto [it, inserted] = modules_.emplace(Basename(path), profile::Module{});
    if (!inserted) return;
    it->second = {Basename(path), path, ""};
    if (readable)
      if (auto id = ReadGnuBuildId(path); id.ok()) it->second.build_id = *id;
  }
  void Warn(const std::string& key, const std::string& text) {
    if (warned_.insert(key).second) section_.warnings.push_back(text);
  }

  const RecordReader& reader_;
  profile::SampleSection section_;
  std::map<int, std::unique_ptr<Space>> spaces_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::set<std::string> warned_;
  std::map<std::string, profile::Module> modules_;
};

std::string DieName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* linkage = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
    linkage = dwarf_formstring(&attr);
  if (linkage) return Demangle(linkage);
  const char* name = dwarf_diename(die);
  return name ? name : "";
}

void Builder::Prepare(Space& s) {
  s.prepared = true;
  s.dwfl = dwfl_begin(&kOfflineCallbacks);
  if (!s.dwfl) return;
  dwfl_report_begin(s.dwfl);
  std::set<std::string> reported;
  for (const auto& m : s.maps) {
    if (m.file.empty() || m.file[0] != '/' || reported.count(m.file)) continue;
    if (EndsWith(m.file, " (deleted)")) {
      NoteModule(m.file, false);
      Warn("deleted:" + m.file,
           m.file + ": the file was deleted after it was mapped; its frames are [unknown]");
      continue;
    }
    reported.insert(m.file);
    // The paths come from the record file: open only regular files (a FIFO would block the
    // open, a device could be read forever); libelf refuses anything that is not ELF.
    struct stat st;
    const bool exists = stat(m.file.c_str(), &st) == 0;
    NoteModule(m.file, exists && S_ISREG(st.st_mode));
    if (exists && !S_ISREG(st.st_mode)) {
      Warn("elf:" + m.file, m.file +
                                ": not a regular file, so not a binary to symbolize; its "
                                "frames are [unknown]");
      continue;
    }
    Dwfl_Module* mod = dwfl_report_elf(s.dwfl, Basename(m.file).c_str(), m.file.c_str(), -1,
                                       m.start - m.pgoff, false);
    if (!mod)
      Warn("elf:" + m.file,
           m.file + ": cannot read it (" + dwfl_errmsg(-1) + "); its frames are [unknown]");
  }
  dwfl_report_end(s.dwfl, nullptr, nullptr);
}

uint32_t Builder::Intern(profile::Frame f) {
  std::string key = f.function + '\x01' + f.module + '\x01' + f.file + '\x01' +
                    std::to_string(f.line) + '\x01' + std::to_string(f.address) +
                    (f.inlined ? "i" : "");
  auto [it, inserted] = frame_ids_.emplace(std::move(key), section_.frames.size());
  if (inserted) section_.frames.push_back(std::move(f));
  return it->second;
}

void Builder::Symbolize(Space& s, uint64_t pc, std::vector<profile::Frame>* out) {
  Dwfl_Module* mod = s.dwfl ? dwfl_addrmodule(s.dwfl, pc) : nullptr;
  if (!mod) {
    if (!s.jit_loaded) {
      s.jit_loaded = true;
      // The map sits in /tmp under a pid-derived name: trusted only when the recorded
      // process's user (or root) wrote it, so no other user can plant names in a profile.
      const uint32_t owner =
          reader_.meta().uid >= 0 ? static_cast<uint32_t>(reader_.meta().uid) : ::geteuid();
      auto jit = PerfMap::LoadTrusted(PerfMap::PathFor(s.pid), owner);
      if (jit.ok())
        s.jit = std::make_unique<PerfMap>(std::move(*jit));
      else if (jit.status().code() != StatusCode::kNotFound)
        Warn("perfmap:" + std::to_string(s.pid),
             "JIT symbol map not read: " + jit.status().message() + "; the JIT frames of pid " +
                 std::to_string(s.pid) + " stay [unknown]");
    }
    if (s.jit) {
      if (const PerfMap::Entry* e = s.jit->Find(pc)) {
        out->push_back({Demangle(e->name), "[jit]", "", 0, pc, false});
        return;
      }
    }
    std::string module = "[unknown]";
    for (const auto& m : s.maps)
      if (pc >= m.start && pc < m.end) {
        bool anon = m.file.empty() || m.file == "//anon" || StartsWith(m.file, "[anon");
        module = anon ? "[anon]" : Basename(m.file);
        if (anon)
          Warn("jit:" + std::to_string(s.pid),
               "pid " + std::to_string(s.pid) +
                   ": samples in anonymous executable memory (JIT code) "
                   "and no " +
                   PerfMap::PathFor(s.pid) +
                   " to name them (oneDNN writes one with ONEDNN_JIT_PROFILE=1)");
        break;
      }
    out->push_back({"[unknown]", module, "", 0, pc, false});
    return;
  }
  const char* modname =
      dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  std::string module = modname ? modname : "[unknown]";
  Dwarf_Addr elf_bias = 0;
  dwfl_module_getelf(mod, &elf_bias);
  uint64_t rel = pc - elf_bias;

  GElf_Off off = 0;
  GElf_Sym sym;
  const char* symname = dwfl_module_addrinfo(mod, pc, &off, &sym, nullptr, nullptr, nullptr);
  std::string outer_name;
  if (symname) {
    // Symbol versions ("__libc_start_main@@GLIBC_2.34") are linker detail, not part of the name.
    std::string plain = symname;
    if (size_t at = plain.find('@'); at != std::string::npos && at > 0) plain.resize(at);
    outer_name = Demangle(plain);
  }
  if (!symname && dwfl_module_getsymtab(mod) <= 0)
    Warn("nosym:" + module,
         module + ": no symbol table (stripped binary); its functions show as [unknown]");

  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, pc, &bias);
  std::string file;
  int line = 0;
  if (Dwfl_Line* l = dwfl_module_getsrc(mod, pc)) {
    int lineno = 0;
    const char* f = dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (f) file = f;
    line = lineno;
  }
  if (!cudie) {
    Dwarf_Addr b;
    if (!dwfl_module_getdwarf(mod, &b))
      Warn(
          "nodebug:" + module,
          module +
              ": no debug info (functions named from the symbol table; "
              "no file:line or inlined frames; install its -dbg/-dbgsym package or build with -g)");
    out->push_back({outer_name.empty() ? "[unknown]" : outer_name, module, file, line, rel, false});
    return;
  }
  // Inline chain: scopes innermost first; each inlined_subroutine's call site is the location
  // within the next outer function.
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(cudie, pc - bias, &scopes);
  std::vector<Dwarf_Die*> chain;
  for (int i = 0; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) chain.push_back(&scopes[i]);
    if (tag == DW_TAG_subprogram) {
      chain.push_back(&scopes[i]);
      break;
    }
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (chain.size() > 1) dwarf_getsrcfiles(cudie, &files, &nfiles);
  std::string cur_file = file;
  int cur_line = line;
  for (size_t k = 0; k < chain.size(); ++k) {
    bool inlined = dwarf_tag(chain[k]) == DW_TAG_inlined_subroutine;
    std::string name = (!inlined && !outer_name.empty()) ? outer_name : DieName(chain[k]);
    if (name.empty()) name = outer_name.empty() ? "[unknown]" : outer_name;
    out->push_back({name, module, cur_file, cur_line, rel, inlined});
    if (inlined) {
      Dwarf_Attribute a;
      Dwarf_Word cf = 0, cl = 0;
      if (dwarf_formudata(dwarf_attr(chain[k], DW_AT_call_file, &a), &cf) == 0 && files &&
          cf < nfiles) {
        const char* fname = dwarf_filesrc(files, cf, nullptr, nullptr);
        cur_file = fname ? fname : "";
      }
      cur_line = dwarf_formudata(dwarf_attr(chain[k], DW_AT_call_line, &a), &cl) == 0
                     ? static_cast<int>(cl)
                     : 0;
    }
  }
  if (chain.empty())
    out->push_back({outer_name.empty() ? "[unknown]" : outer_name, module, file, line, rel, false});
  free(scopes);
}

const std::vector<uint32_t>& Builder::FramesFor(Space& s, uint64_t pc) {
  auto it = s.cache.find(pc);
  if (it != s.cache.end()) return it->second;
  std::vector<profile::Frame> frames;
  Symbolize(s, pc, &frames);
  std::vector<uint32_t> ids;
  for (auto& f : frames) ids.push_back(Intern(std::move(f)));
  return s.cache.emplace(pc, std::move(ids)).first->second;
}

StatusOr<profile::SampleSection> Builder::Run() {
  const RecordMeta& meta = reader_.meta();
  section_.event = meta.event;
  section_.unit = meta.unit;
  section_.call_graph = CallGraphName(meta.call_graph);
  section_.frequency_hz = meta.frequency_hz;

  // Pass 1: address spaces and thread names, applied in time order.
  struct Ev {
    int64_t t;
    int kind;  // 0 mmap, 1 comm, 2 fork
    size_t i;
  };
  std::vector<RawMmap> mmaps;
  std::vector<RawComm> comms;
  std::vector<RawFork> forks;
  std::vector<Ev> evs;
  EventVisitor v1;
  v1.mmap = [&](const RawMmap& m) {
    evs.push_back({m.time_ns, 0, mmaps.size()});
    mmaps.push_back(m);
  };
  v1.comm = [&](const RawComm& c) {
    evs.push_back({c.time_ns, 1, comms.size()});
    comms.push_back(c);
  };
  v1.fork = [&](const RawFork& f) {
    evs.push_back({f.time_ns, 2, forks.size()});
    forks.push_back(f);
  };
  v1.lost = [&](uint64_t n) { section_.lost += n; };
  Status st = reader_.VisitEvents(v1);
  if (!st.ok()) section_.warnings.push_back(st.message());
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  for (const Ev& e : evs) {
    if (e.kind == 0) {
      const RawMmap& m = mmaps[e.i];
      SpaceFor(m.pid).maps.push_back({m.start, m.start + m.len, m.pgoff, m.filename});
    } else if (e.kind == 1) {
      const RawComm& c = comms[e.i];
      if (c.exec && c.pid == c.tid) SpaceFor(c.pid).maps.clear();
      section_.thread_names[c.tid] = c.comm;
    } else {
      const RawFork& f = forks[e.i];
      if (f.pid != f.ppid && spaces_.count(f.ppid) && !spaces_.count(f.pid))
        SpaceFor(f.pid).maps = SpaceFor(f.ppid).maps;
      if (!section_.thread_names.count(f.tid) && section_.thread_names.count(f.ptid))
        section_.thread_names[f.tid] = section_.thread_names[f.ptid];
    }
  }

  // Pass 2: samples.
  const bool dwarf = meta.call_graph == CallGraph::kDwarf;
  std::vector<uint64_t> pcs;
  uint64_t truncated = 0;
  EventVisitor v2;
  v2.sample = [&](const RawSample& raw) {
    Space& s = SpaceFor(raw.pid);
    if (!s.prepared) Prepare(s);
    pcs.clear();
    if (dwarf) {
      if (!s.unwinder && !s.unwinder_failed && s.dwfl) {
        std::string err;
        s.unwinder = DwarfUnwinder::Attach(s.dwfl, s.pid, &err);
        if (!s.unwinder) {
          s.unwinder_failed = true;
          Warn("unwind:" + std::to_string(s.pid), "pid " + std::to_string(s.pid) +
                                                      ": DWARF unwinding unavailable (" + err +
                                                      "); only sampled IPs kept");
        }
      }
      if (s.unwinder) {
        s.unwinder->Unwind(raw, &pcs);
      } else if (!raw.ips.empty()) {
        pcs.push_back(raw.ips[0]);
      }
    } else {
      for (size_t i = 0; i < raw.ips.size(); ++i)
        pcs.push_back(i == 0 ? raw.ips[i] : raw.ips[i] - 1);
    }
    if (pcs.size() >= 250) ++truncated;
    profile::Sample smp;
    smp.pid = raw.pid;
    smp.tid = raw.tid;
    smp.time_ns = raw.time_ns;
    smp.weight = static_cast<double>(raw.period);
    for (uint64_t pc : pcs) {
      const auto& ids = FramesFor(s, pc);
      smp.stack.insert(smp.stack.end(), ids.begin(), ids.end());
    }
    section_.samples.push_back(std::move(smp));
  };
  v2.mmap = nullptr;
  st = reader_.VisitEvents(v2);
  (void)st;  // already reported in pass 1
  if (truncated)
    section_.warnings.push_back(std::to_string(truncated) +
                                " samples had call chains deeper than 250 frames (cut)");
  if (section_.lost)
    section_.warnings.push_back(
        std::to_string(section_.lost) +
        " samples lost in ring-buffer overflow (lower -F or raise the ring size)");
  if (reader_.bytes_dropped())
    section_.warnings.push_back(
        "recording is incomplete: " + std::to_string(reader_.bytes_dropped()) +
        " bytes at the end were dropped (" + reader_.drop_reason() + ")");
  // The files the frames are in, with their paths and build ids (pprof's Mapping).
  std::set<std::string> used;
  for (const auto& f : section_.frames) used.insert(f.module);
  for (const auto& [name, m] : modules_)
    if (used.count(name)) section_.modules.push_back(m);
  // Threads that exist now (in-process sampling, or a still-running target) name themselves.
  for (const auto& smp : section_.samples) {
    if (section_.thread_names.count(smp.tid)) continue;
    std::string comm = Trim(ReadSysFile("/proc/" + std::to_string(smp.pid) + "/task/" +
                                        std::to_string(smp.tid) + "/comm"));
    section_.thread_names[smp.tid] = comm.empty() ? "tid " + std::to_string(smp.tid) : comm;
  }
  return std::move(section_);
}

}  // namespace

std::string Demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

StatusOr<profile::SampleSection> Symbolize(const RecordReader& reader) {
  // Never reach out to debuginfod servers from a profiler: symbolization must be local and fast.
  unsetenv("DEBUGINFOD_URLS");
  Builder b(reader);
  return b.Run();
}

}  // namespace opscope::collect
