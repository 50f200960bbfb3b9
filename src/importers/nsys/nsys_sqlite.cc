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
//   CUDA_GPU_MEMORY_USAGE_EVENTS (`--cuda-memory-usage=true`) start, bytes, memKind,
//                               memoryOperationType, and where present deviceId, address,
//                               globalPid, contextId, correlationId; ENUM_CUDA_MEM_KIND and
//                               ENUM_CUDA_DEV_MEM_EVENT_OPER (id, name) name their codes
//                               (without them: kinds 2 device, 3 array, 5 device static;
//                               operation 0 allocation, 1 deallocation). They become the memory
//                               section (ReadDeviceMemory).
// globalTid packs the process and thread ids: tid = globalTid & 0xFFFFFF, pid = bits 24..47.
// Tables a capture lacks (no CUDA API tracing, no NVTX) are simply absent. Times are ns.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "base/strings.h"
#include "importers/importer.h"
#include "sections/memory/memory_section.h"

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

// The device memory of the capture (CUDA_GPU_MEMORY_USAGE_EVENTS) as the memory section of the
// device with the most device-memory events: one step per NVTX range name (the innermost range
// open on the allocating thread, through the correlation id of the CUDA call that allocated or
// freed), plus "(outside NVTX ranges)". Per step: bytes allocated and freed per occurrence, and
// the device total's highest value while one of its occurrences ran. Frees are matched to their
// allocation by (process, context, address) where the table has those columns.
Status ReadDeviceMemory(Db& db,
                        const std::unordered_map<uint32_t, const profile::GpuApiCall*>& calls,
                        profile::Profile* p) {
  const std::string table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
  if (!db.HasTable(table)) return Status::Ok();
  const auto cols = db.Columns(table);
  for (const char* need : {"start", "bytes", "memKind", "memoryOperationType"})
    if (!cols.count(need)) {
      p->meta.degradations.push_back(table + " has no column '" + need +
                                     "': device memory not read");
      return Status::Ok();
    }
  auto col = [&](const char* c) { return cols.count(c) ? std::string(c) : std::string("0"); };
  // Codes, named by the export's enum tables where it has them.
  std::set<int64_t> device_kinds = {2, 3, 5}, alloc_ops = {0}, free_ops = {1};
  // An enum table's (id, NAME upper-cased) rows; empty when the export has none.
  auto read_enum = [&](const char* name) {
    std::vector<std::pair<int64_t, std::string>> rows;
    if (!db.HasTable(name) || !db.Columns(name).count("name")) return rows;
    (void)db.Query(std::string("SELECT id, name FROM ") + name, [&](sqlite3_stmt* s) {
      std::string n = Text(s, 1);
      for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      rows.emplace_back(sqlite3_column_int64(s, 0), n);
    });
    return rows;
  };
  auto has = [](const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
  };
  if (auto kinds = read_enum("ENUM_CUDA_MEM_KIND"); !kinds.empty()) {
    device_kinds.clear();
    for (const auto& [id, n] : kinds)
      if ((has(n, "DEVICE") || has(n, "ARRAY")) && !has(n, "MANAGED")) device_kinds.insert(id);
  }
  if (auto ops = read_enum("ENUM_CUDA_DEV_MEM_EVENT_OPER"); !ops.empty()) {
    alloc_ops.clear();
    free_ops.clear();
    for (const auto& [id, n] : ops)
      if (has(n, "DEALLOC") || has(n, "FREE") || has(n, "RELEASE"))
        free_ops.insert(id);
      else if (has(n, "ALLOC"))
        alloc_ops.insert(id);
  }
  struct Event {
    int64_t start, bytes, op;  // op: +1 allocation, -1 free
    int32_t device;
    int64_t pid, context, address;
    uint32_t corr;
  };
  std::vector<Event> events;
  std::map<int32_t, size_t> per_device;
  size_t other_kinds = 0, unknown_ops = 0, bad = 0;
  OPSCOPE_RETURN_IF_ERROR(
      db.Query("SELECT start, bytes, memKind, memoryOperationType, " + col("deviceId") + ", " +
                   col("globalPid") + ", " + col("contextId") + ", " + col("address") + ", " +
                   col("correlationId") + " FROM " + table + " ORDER BY start",
               [&](sqlite3_stmt* s) {
                 Event e;
                 e.start = sqlite3_column_int64(s, 0);
                 e.bytes = sqlite3_column_int64(s, 1);
                 if (e.start < 0 || e.bytes < 0 || e.bytes > (int64_t{1} << 50)) {
                   ++bad;
                   return;
                 }
                 if (!device_kinds.count(sqlite3_column_int64(s, 2))) {
                   ++other_kinds;
                   return;
                 }
                 const int64_t op = sqlite3_column_int64(s, 3);
                 e.op = alloc_ops.count(op) ? 1 : free_ops.count(op) ? -1 : 0;
                 if (e.op == 0) {
                   ++unknown_ops;
                   return;
                 }
                 e.device = sqlite3_column_int(s, 4);
                 e.pid = sqlite3_column_int64(s, 5);
                 e.context = sqlite3_column_int64(s, 6);
                 e.address = sqlite3_column_int64(s, 7);
                 e.corr = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
                 ++per_device[e.device];
                 events.push_back(e);
               })
          .WithPrefix(p->meta.source));
  if (events.empty()) {
    if (other_kinds + unknown_ops + bad > 0)
      p->meta.degradations.push_back(
          fmt::format("{}: {} memory events, none of device memory with a known operation", table,
                      other_kinds + unknown_ops + bad));
    return Status::Ok();
  }
  int32_t device = per_device.begin()->first;
  for (const auto& [d, n] : per_device)
    if (n > per_device[device]) device = d;

  // The device total after each event; frees take their allocation's size when it is known.
  const bool addressed = cols.count("address") > 0;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> live;  // (pid, ctx, addr) -> bytes
  std::vector<std::pair<int64_t, double>> total_after;            // (time, bytes)
  double total = 0;
  size_t unmatched_frees = 0;
  std::vector<const Event*> used;
  for (const Event& e : events) {
    if (e.device != device) continue;
    double delta = static_cast<double>(e.bytes) * e.op;
    if (addressed) {
      const auto key = std::make_tuple(e.pid, e.context, e.address);
      if (e.op > 0) {
        live[key] = e.bytes;
      } else if (auto it = live.find(key); it != live.end()) {
        delta = -static_cast<double>(it->second);
        live.erase(it);
      } else {
        ++unmatched_frees;  // allocated before the capture began
        delta = 0;
      }
    }
    total += delta;
    total_after.emplace_back(e.start, total);
    used.push_back(&e);
  }
  // The innermost NVTX range open on the calling thread at the call, by name.
  auto range_of = [&](const Event& e) -> int {
    auto c = calls.find(e.corr);
    const int32_t tid = c != calls.end() ? c->second->tid : -1;
    const int64_t at = c != calls.end() ? c->second->start_ns : e.start;
    int best = -1;
    for (size_t i = 0; i < p->ranges.size(); ++i) {
      const auto& r = p->ranges[i];
      if ((tid < 0 || r.tid == tid) && r.start_ns <= at && at <= r.end_ns &&
          (best < 0 || r.depth > p->ranges[static_cast<size_t>(best)].depth))
        best = static_cast<int>(i);
    }
    return best;
  };
  const bool attribute = p->ranges.size() * used.size() < 50'000'000;
  memory::MemorySection m;
  m.device = fmt::format("cuda:{}", device);
  std::map<std::string, size_t> step_of;
  auto step = [&](const std::string& name) -> memory::MemStep& {
    auto [it, fresh] = step_of.emplace(name, m.steps.size());
    if (fresh) {
      m.steps.emplace_back();
      m.steps.back().name = name;
    }
    return m.steps[it->second];
  };
  const std::string outside = "(outside NVTX ranges)";
  std::map<std::string, size_t> occurrences;
  for (const auto& r : p->ranges) ++occurrences[r.name];
  for (size_t i = 0; i < used.size(); ++i) {
    const Event& e = *used[i];
    const int r = attribute ? range_of(e) : -1;
    memory::MemStep& st = step(r < 0 ? outside : p->ranges[static_cast<size_t>(r)].name);
    const double delta =
        i == 0 ? total_after[0].second : total_after[i].second - total_after[i - 1].second;
    (delta >= 0 ? st.allocated_bytes : st.released_bytes) += std::fabs(delta);
    st.live_bytes = std::max(st.live_bytes, total_after[i].second);
  }
  // A range's highest total while it ran also counts what it inherited, not only its own events.
  if (attribute)
    for (const auto& r : p->ranges) {
      auto it = step_of.find(r.name);
      if (it == step_of.end()) continue;
      memory::MemStep& st = m.steps[it->second];
      auto first = std::lower_bound(total_after.begin(), total_after.end(),
                                    std::make_pair(r.start_ns, -1e300));
      double before = first == total_after.begin() ? 0 : std::prev(first)->second;
      st.live_bytes = std::max(st.live_bytes, before);
      for (auto t = first; t != total_after.end() && t->first <= r.end_ns; ++t)
        st.live_bytes = std::max(st.live_bytes, t->second);
    }
  for (auto& st : m.steps) {
    const size_t n = st.name == outside ? 1 : std::max<size_t>(occurrences[st.name], 1);
    st.allocated_bytes /= static_cast<double>(n);
    st.released_bytes /= static_cast<double>(n);
    st.arena_live_bytes = 0;
  }
  double held = 0;
  for (const auto& [k, b] : live) held += static_cast<double>(b);
  m.source = fmt::format(
      "Nsight Systems {} of cuda:{} (device, array and static memory): per NVTX range name, the "
      "bytes its calls allocated and freed per occurrence and the device total's highest value "
      "while it ran; {:.0f} bytes still allocated at the end of the capture{}",
      table, device, addressed ? held : total,
      addressed ? fmt::format(" in {} allocation(s)", live.size()) : std::string());
  memory::SetPeak(&m);
  p->sections.Get<memory::MemorySection>() = std::move(m);
  if (unmatched_frees)
    p->meta.degradations.push_back(fmt::format(
        "{}: {} free(s) of cuda:{} memory allocated before the capture began not counted", table,
        unmatched_frees, device));
  if (per_device.size() > 1)
    p->meta.degradations.push_back(fmt::format(
        "{}: device memory of {} devices; the memory section shows cuda:{} (the most events)",
        table, per_device.size(), device));
  if (!attribute)
    p->meta.degradations.push_back(table + ": too many events x NVTX ranges to attribute; " +
                                   "every event is counted outside NVTX ranges");
  if (bad)
    p->meta.degradations.push_back(fmt::format(
        "{}: {} events with a negative time or an implausible size were skipped", table, bad));
  return Status::Ok();
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
  std::unordered_map<uint32_t, const profile::GpuApiCall*> calls;
  for (const auto& a : g.api_calls) calls[a.correlation_id] = &a;
  OPSCOPE_RETURN_IF_ERROR(ReadDeviceMemory(db, calls, &p));
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
