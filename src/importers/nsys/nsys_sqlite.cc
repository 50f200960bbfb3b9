// Nsight Systems exports (`nsys export --type sqlite report.nsys-rep`), into the same gpu
// section and ranges `opscope gpu` writes, so its kernel/copy summaries, repeated-copy and gap
// detection apply.
//
// Tables read (nsys's documented export schema; names are ids into StringIds(id, value)):
//   CUPTI_ACTIVITY_KIND_KERNEL  start, end, deviceId, streamId, correlationId, demangledName
//                               (or shortName), gridX..Z, blockX..Z, registersPerThread,
//                               staticSharedMemory, dynamicSharedMemory
//   CUPTI_ACTIVITY_KIND_MEMCPY  start, end, deviceId, streamId, correlationId, bytes, copyKind
//                               (CUPTI's enum: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, 10 PtoP),
//                               srcKind/dstKind (memory kinds: 1 pageable)
//   CUPTI_ACTIVITY_KIND_MEMSET  start, end, deviceId, streamId, correlationId, bytes
//   CUPTI_ACTIVITY_KIND_RUNTIME start, end, globalTid, correlationId, nameId
//   NVTX_EVENTS                 start, end, eventType (59 push/pop, 60 start/end), text or
//                               textId, globalTid, domainId; eventType 75 (domain created)
//                               names a domain (text), per process
//   TARGET_INFO_GPU             name (the device)
// globalTid packs the process and thread ids: tid = globalTid & 0xFFFFFF, pid = bits 24..47.
// Tables a capture lacks (no CUDA API tracing, no NVTX) are simply absent. Times are ns.
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "importers/importer.h"

namespace opscope::importers {
namespace {

constexpr std::string_view kMagic("SQLite format 3\0", 16);

int Sniff(std::string_view head, const std::string&) {
  if (head.size() >= kMagic.size() && head.substr(0, kMagic.size()) == kMagic) {
    // An nsys export names its tables in the schema page, usually within the first pages.
    if (head.find("CUPTI_ACTIVITY_KIND_") != std::string_view::npos ||
        head.find("StringIds") != std::string_view::npos)
      return kSniffCertain;
    return kSniffWeak;
  }
  return kSniffNo;
}

class Db {
 public:
  ~Db() {
    if (db_) sqlite3_close(db_);
  }
  Status Open(const Source& src) {
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
      return Internal("sqlite: cannot open an in-memory database");
    auto* data = reinterpret_cast<unsigned char*>(const_cast<char*>(src.bytes().data()));
    const auto n = static_cast<sqlite3_int64>(src.bytes().size());
    int rc = sqlite3_deserialize(db_, "main", data, n, n, SQLITE_DESERIALIZE_READONLY);
    if (rc != SQLITE_OK) return DataLoss(src.origin() + ": not a readable SQLite database");
    // Bound the work a corrupt file can cause.
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, 1 << 24);
    return Status::Ok();
  }
  bool HasTable(const std::string& t) {
    bool found = false;
    (void)Query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='" + t + "'",
                [&](sqlite3_stmt*) { found = true; });
    return found;
  }
  std::set<std::string> Columns(const std::string& t) {
    std::set<std::string> cols;
    (void)Query("PRAGMA table_info(" + t + ")", [&](sqlite3_stmt* s) {
      const unsigned char* c = sqlite3_column_text(s, 1);
      if (c) cols.insert(reinterpret_cast<const char*>(c));
    });
    return cols;
  }
  Status Query(const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      return DataLoss(std::string("sqlite: ") + sqlite3_errmsg(db_));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
    std::string err = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    if (!err.empty()) return DataLoss("sqlite: " + err + " (corrupt database?)");
    return Status::Ok();
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

const char* CopyKind(int64_t k) {
  switch (k) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "other";
  }
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  Db db;
  OPSCOPE_RETURN_IF_ERROR(db.Open(src));
  const bool kernels = db.HasTable("CUPTI_ACTIVITY_KIND_KERNEL");
  const bool runtime = db.HasTable("CUPTI_ACTIVITY_KIND_RUNTIME");
  const bool nvtx = db.HasTable("NVTX_EVENTS");
  if (!db.HasTable("StringIds") || (!kernels && !runtime && !nvtx))
    return DataLoss(origin +
                    ": a SQLite database without Nsight Systems tables (StringIds, "
                    "CUPTI_ACTIVITY_KIND_*); export with `nsys export --type sqlite`");
  profile::Profile p = util::NewProfile("nsys", origin);
  p.gpu.emplace();
  auto& g = *p.gpu;
  std::unordered_map<int64_t, std::string> strings;
  OPSCOPE_RETURN_IF_ERROR(db.Query("SELECT id, value FROM StringIds", [&](sqlite3_stmt* s) {
                              strings[sqlite3_column_int64(s, 0)] = Text(s, 1);
                            }).WithPrefix(origin));
  auto str = [&](int64_t id) {
    auto it = strings.find(id);
    return it == strings.end() ? "[string " + std::to_string(id) + "]" : it->second;
  };
  std::vector<std::string> bad;
  auto check_span = [&](int64_t a, int64_t b, const char* what) {
    if (b < a || a < 0) {
      bad.push_back(what);
      return false;
    }
    return true;
  };
  if (kernels) {
    auto cols = db.Columns("CUPTI_ACTIVITY_KIND_KERNEL");
    std::string name_col = cols.count("demangledName") ? "demangledName"
                           : cols.count("shortName")   ? "shortName"
                                                       : "0";
    auto col = [&](const char* c) { return cols.count(c) ? std::string(c) : std::string("0"); };
    std::string sql = "SELECT start, end, " + col("deviceId") + ", " + col("streamId") + ", " +
                      col("correlationId") + ", " + name_col + ", " + col("gridX") + ", " +
                      col("gridY") + ", " + col("gridZ") + ", " + col("blockX") + ", " +
                      col("blockY") + ", " + col("blockZ") + ", " + col("registersPerThread") +
                      ", " + col("staticSharedMemory") + ", " + col("dynamicSharedMemory") +
                      " FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start";
    OPSCOPE_RETURN_IF_ERROR(
        db.Query(sql, [&](sqlite3_stmt* s) {
            profile::GpuKernel k;
            k.start_ns = sqlite3_column_int64(s, 0);
            k.end_ns = sqlite3_column_int64(s, 1);
            if (!check_span(k.start_ns, k.end_ns, "kernel")) return;
            k.device = sqlite3_column_int(s, 2);
            k.stream = sqlite3_column_int(s, 3);
            k.correlation_id = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
            k.name = str(sqlite3_column_int64(s, 5));
            for (int a = 0; a < 3; ++a) {
              k.grid[a] = std::max(0, sqlite3_column_int(s, 6 + a));
              k.block[a] = std::max(0, sqlite3_column_int(s, 9 + a));
            }
            k.registers_per_thread = std::max(0, sqlite3_column_int(s, 12));
            k.static_shared_bytes = std::max<int64_t>(0, sqlite3_column_int64(s, 13));
            k.dynamic_shared_bytes = std::max<int64_t>(0, sqlite3_column_int64(s, 14));
            g.kernels.push_back(std::move(k));
          }).WithPrefix(origin));
  }
  if (db.HasTable("CUPTI_ACTIVITY_KIND_MEMCPY")) {
    auto cols = db.Columns("CUPTI_ACTIVITY_KIND_MEMCPY");
    std::string src_kind = cols.count("srcKind") ? "srcKind" : "0";
    std::string dst_kind = cols.count("dstKind") ? "dstKind" : "0";
    OPSCOPE_RETURN_IF_ERROR(
        db.Query("SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind, " +
                     src_kind + ", " + dst_kind + " FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start",
                 [&](sqlite3_stmt* s) {
                   profile::GpuMemcpy m;
                   m.start_ns = sqlite3_column_int64(s, 0);
                   m.end_ns = sqlite3_column_int64(s, 1);
                   if (!check_span(m.start_ns, m.end_ns, "memcpy")) return;
                   m.device = sqlite3_column_int(s, 2);
                   m.stream = sqlite3_column_int(s, 3);
                   m.correlation_id = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
                   m.bytes = std::max<int64_t>(0, sqlite3_column_int64(s, 5));
                   m.kind = CopyKind(sqlite3_column_int64(s, 6));
                   // CUPTI memory kind 1 = pageable host memory.
                   int64_t host_kind = m.kind == "HtoD"   ? sqlite3_column_int64(s, 7)
                                       : m.kind == "DtoH" ? sqlite3_column_int64(s, 8)
                                                          : 0;
                   m.pageable = host_kind == 1;
                   g.memcpys.push_back(std::move(m));
                 })
            .WithPrefix(origin));
  }
  if (db.HasTable("CUPTI_ACTIVITY_KIND_MEMSET")) {
    OPSCOPE_RETURN_IF_ERROR(
        db.Query("SELECT start, end, deviceId, streamId, correlationId, bytes FROM "
                 "CUPTI_ACTIVITY_KIND_MEMSET ORDER BY start",
                 [&](sqlite3_stmt* s) {
                   profile::GpuMemset m;
                   m.start_ns = sqlite3_column_int64(s, 0);
                   m.end_ns = sqlite3_column_int64(s, 1);
                   if (!check_span(m.start_ns, m.end_ns, "memset")) return;
                   m.device = sqlite3_column_int(s, 2);
                   m.stream = sqlite3_column_int(s, 3);
                   m.correlation_id = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
                   m.bytes = std::max<int64_t>(0, sqlite3_column_int64(s, 5));
                   g.memsets.push_back(m);
                 })
            .WithPrefix(origin));
  }
  std::unordered_map<uint32_t, int32_t> launcher;  // correlation id -> tid
  if (runtime) {
    OPSCOPE_RETURN_IF_ERROR(
        db.Query("SELECT start, end, globalTid, correlationId, nameId FROM "
                 "CUPTI_ACTIVITY_KIND_RUNTIME "
                 "ORDER BY start",
                 [&](sqlite3_stmt* s) {
                   profile::GpuApiCall a;
                   a.start_ns = sqlite3_column_int64(s, 0);
                   a.end_ns = sqlite3_column_int64(s, 1);
                   if (!check_span(a.start_ns, a.end_ns, "runtime API call")) return;
                   a.tid = static_cast<int32_t>(sqlite3_column_int64(s, 2) & 0xFFFFFF);
                   a.correlation_id = static_cast<uint32_t>(sqlite3_column_int64(s, 3));
                   std::string name = str(sqlite3_column_int64(s, 4));
                   // "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"
                   size_t v = name.rfind("_v");
                   if (v != std::string::npos && v + 2 < name.size() &&
                       name.find_first_not_of("0123456789", v + 2) == std::string::npos)
                     name = name.substr(0, v);
                   a.name = name;
                   // The table holds driver calls too (cuLaunchKernel, cuModuleLoadData).
                   a.api =
                       StartsWith(name, "cu") && !StartsWith(name, "cuda") ? "driver" : "runtime";
                   launcher[a.correlation_id] = a.tid;
                   g.api_calls.push_back(std::move(a));
                 })
            .WithPrefix(origin));
    for (auto& k : g.kernels)
      if (auto it = launcher.find(k.correlation_id); it != launcher.end()) k.tid = it->second;
    for (auto& m : g.memcpys)
      if (auto it = launcher.find(m.correlation_id); it != launcher.end()) m.tid = it->second;
    // Async copies: the API name says so.
    std::unordered_map<uint32_t, const profile::GpuApiCall*> by_corr;
    for (const auto& a : g.api_calls) by_corr[a.correlation_id] = &a;
    for (auto& m : g.memcpys)
      if (auto it = by_corr.find(m.correlation_id); it != by_corr.end())
        m.async = it->second->name.find("Async") != std::string::npos;
  }
  if (nvtx) {
    auto cols = db.Columns("NVTX_EVENTS");
    std::string text = cols.count("text") ? "text" : "NULL";
    std::string text_id = cols.count("textId") ? "textId" : "NULL";
    std::string domain = cols.count("domainId") ? "domainId" : "0";
    // Domain names: each nvtxDomainCreate is an event of type 75 whose text is the name; domain
    // ids are per process (the pid bits of globalTid).
    std::map<std::pair<int64_t, int64_t>, std::string> domain_names;
    if (cols.count("domainId"))
      (void)db.Query("SELECT domainId, globalTid, " + text + ", " + text_id +
                         " FROM NVTX_EVENTS WHERE eventType = 75",
                     [&](sqlite3_stmt* s) {
                       std::string n = sqlite3_column_type(s, 2) == SQLITE_NULL
                                           ? str(sqlite3_column_int64(s, 3))
                                           : Text(s, 2);
                       if (!n.empty())
                         domain_names[{(sqlite3_column_int64(s, 1) >> 24) & 0xFFFFFF,
                                       sqlite3_column_int64(s, 0)}] = n;
                     });
    OPSCOPE_RETURN_IF_ERROR(
        db.Query(
              "SELECT start, end, eventType, " + text + ", " + text_id + ", globalTid, " + domain +
                  " FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL ORDER BY "
                  "start",
              [&](sqlite3_stmt* s) {
                profile::Range r;
                r.start_ns = sqlite3_column_int64(s, 0);
                r.end_ns = sqlite3_column_int64(s, 1);
                if (!check_span(r.start_ns, r.end_ns, "NVTX range")) return;
                r.name = sqlite3_column_type(s, 3) == SQLITE_NULL ? str(sqlite3_column_int64(s, 4))
                                                                  : Text(s, 3);
                r.tid = static_cast<int32_t>(sqlite3_column_int64(s, 5) & 0xFFFFFF);
                const int64_t dom = sqlite3_column_int64(s, 6);
                auto named =
                    domain_names.find({(sqlite3_column_int64(s, 5) >> 24) & 0xFFFFFF, dom});
                r.domain = dom == 0                      ? "default"
                           : named != domain_names.end() ? named->second
                                                         : "domain " + std::to_string(dom);
                p.ranges.push_back(std::move(r));
              })
            .WithPrefix(origin));
    // Nesting per thread: a range inside the innermost open one is its child.
    std::map<int32_t, std::vector<int32_t>> open;
    for (size_t i = 0; i < p.ranges.size(); ++i) {
      auto& stack = open[p.ranges[i].tid];
      while (!stack.empty() && p.ranges[stack.back()].end_ns < p.ranges[i].end_ns) stack.pop_back();
      if (!stack.empty() && p.ranges[stack.back()].start_ns <= p.ranges[i].start_ns) {
        p.ranges[i].parent = stack.back();
        p.ranges[i].depth = p.ranges[stack.back()].depth + 1;
      }
      stack.push_back(static_cast<int32_t>(i));
    }
    // Each kernel's range: the innermost one open on its launching thread at launch.
    std::unordered_map<uint32_t, int64_t> launch_at;
    for (const auto& a : g.api_calls) launch_at[a.correlation_id] = a.start_ns;
    auto range_of = [&](uint32_t corr, int32_t tid) {
      auto it = launch_at.find(corr);
      if (it == launch_at.end()) return -1;
      int best = -1;
      for (size_t i = 0; i < p.ranges.size(); ++i) {
        const auto& r = p.ranges[i];
        if (r.tid == tid && r.start_ns <= it->second && it->second <= r.end_ns &&
            (best < 0 || r.depth > p.ranges[best].depth))
          best = static_cast<int>(i);
      }
      return best;
    };
    if (p.ranges.size() * (g.kernels.size() + g.memcpys.size()) < 50'000'000) {
      for (auto& k : g.kernels) k.range = range_of(k.correlation_id, k.tid);
      for (auto& m : g.memcpys) m.range = range_of(m.correlation_id, m.tid);
    }
  }
  if (db.HasTable("TARGET_INFO_GPU") && db.Columns("TARGET_INFO_GPU").count("name")) {
    (void)db.Query("SELECT name FROM TARGET_INFO_GPU LIMIT 1",
                   [&](sqlite3_stmt* s) { g.device_name = Text(s, 0); });
  }
  if (!bad.empty())
    p.meta.degradations.push_back(std::to_string(bad.size()) +
                                  " records end before they start "
                                  "or start before 0 (first: a " +
                                  bad[0] + ") and were skipped");
  if (!runtime)
    p.meta.degradations.push_back(
        "no CUDA runtime API table: kernels are not linked to their "
        "launching threads or NVTX ranges");
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_nsys = {"nsys", "Nsight Systems `nsys export --type sqlite`", Sniff,
                                    Parse};
}  // namespace formats

}  // namespace opscope::importers
