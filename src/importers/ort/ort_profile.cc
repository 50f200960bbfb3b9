// ONNX Runtime's profiler output (SessionOptions.enable_profiling, `onnxruntime_perf_test -p`):
// a JSON array of Chrome-trace "X" events.
//
//   {"cat":"Session", "name":"model_run", "ts":..., "dur":..., ...}       one per Run()
//   {"cat":"Node", "name":"<node>_kernel_time", "ts", "dur", "args":{"op_name":"Conv",
//    "provider":"CPUExecutionProvider", "input_type_shape":[{"float":[1,3,224,224]}, ...],
//    "output_type_shape":[...], "node_index":"12", "thread_scheduling_stats":"..."}}
//   {"cat":"Node", "name":"<node>_fence_before" / "_fence_after"}          older releases
//   {"cat":"Kernel", "name":"<cuda kernel>", "args":{"op_name", "parent_name", "grid_x", ...}}
//                                                                          CUDA EP kernels
// Files from 2019 releases carry only "op_name" in args. Times are microseconds on the
// profiler's clock (ts from the session start).
//
// Each node's `_kernel_time` events are summed per run; a run is the `model_run` event whose
// interval holds the event's start (or, in files without model_run events, the node's k-th
// occurrence). Rows are the ORT node names, which are the ONNX node names except for nodes
// ORT's optimizers created ("<name>_nchwc", "ReorderInput_token_7", fused "Conv+Relu" nodes
// named after their last node): the model join (--model) maps those back.
//
// Streamed (json_scan.h): one pass over the memory-mapped file, each event parsed on its own by
// simdjson On Demand; memory is the rows and one small record per node event.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "base/strings.h"
#include "importers/importer.h"
#include "importers/json_scan.h"
#include "sections/memory/memory_section.h"

namespace opscope::importers {
namespace {

namespace od = simdjson::ondemand;

int Sniff(std::string_view head, const std::string&) {
  size_t i = 0;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i >= head.size() || head[i] != '[') return kSniffNo;
  auto has = [&](std::string_view s) { return head.find(s) != std::string_view::npos; };
  // ORT writes `"cat" : "Session"` (spaces around the colon); accept any spacing.
  bool cat = has("\"cat\"");
  if (!cat || !has("\"ph\"")) return kSniffNo;
  if (has("_kernel_time") || has("\"model_loading_uri\"") || has("\"session_initialization\"") ||
      has("\"model_run\""))
    return kSniffCertain;
  if (has("\"Session\"") || has("\"Node\"")) return kSniffLikely;
  return kSniffNo;
}

struct NodeRow {
  std::string name, op_type, provider;
  std::vector<std::vector<int64_t>> in_shapes, out_shapes;
  int64_t index = -1;
  bool parallel = false;  // thread_scheduling_stats showed sub-threads
  // Bytes of the node's input activations, its initializer inputs and its outputs (ORT's
  // sequential executor writes them per kernel event); -1 when the file has none.
  double activation_bytes = -1, parameter_bytes = -1, output_bytes = -1;
};

// One node event's "thread_scheduling_stats" (ORT's ThreadPoolProfiler::Stop, written as a JSON
// object since the profiler writes args starting with '{' unquoted; older builds quoted it):
//   {"main_thread": {"thread_pool_name": "session-1-intra-op", "thread_id": "1403",
//                    "block_size": [1, 4], "core": 3, "Distribution": 12,
//                    "DistributionEnqueue": 3, "Run": 250, "Wait": 40, "WaitRevoke": 0},
//    "sub_threads": {"1404": {"num_run": 2, "core": 5}, ...}}
// Times are µs; block_size has one entry per parallel loop the node dispatched; a sub-thread's
// num_run counts since the session started (so a node's share is the increase over the
// previous node event).
struct ThreadStats {
  int loops = 0;          // parallel loops dispatched (entries of block_size)
  int64_t max_block = 0;  // the largest block size
  double distribution_us = 0, run_us = 0, wait_us = 0;
  std::vector<std::pair<std::string, int64_t>> sub;  // thread id -> cumulative num_run
  std::string pool;
};

struct NodeEvent {
  int32_t row;
  double ts_us, dur_us;
  int32_t stats = -1;  // index into the stats list, -1 when the event had none
  int64_t tid = 0;
  int32_t arena = -1;  // index into the arena readings, -1 when the event had none
};

// The CPU arena allocator's statistics after a kernel (ORT 1.17+ writes them into each node
// event's args from the allocator's GetStats): bytes in use, the most ever in use, bytes the
// arena holds (reserved from the system), and the change of bytes in use during the node. Only
// the first run follows tensors one by one: once a memory pattern is cached, later runs take one
// block for every activation at their start, and in use stays flat (deltas 0).
struct ArenaReading {
  double in_use = -1, peak = -1, held = -1, in_use_delta = 0;
};

// The nodes of an If, Loop or Scan body run inside their parent's kernel, so their events lie
// within the parent's event on the same thread and the parent's duration already holds them.
// Makes every parent exclusive of the events nested in it (its own body's nodes, which may be
// parents themselves), as opscope's engine reports subgraphs; returns how many were nested.
// Only control-flow rows (`parent_row`) hold others: two ordinary events that touch or overlap
// by a rounding are not nested.
size_t MakeParentsExclusive(std::vector<NodeEvent>* events, const std::vector<bool>& parent_row) {
  std::vector<size_t> order(events->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const NodeEvent &x = (*events)[a], &y = (*events)[b];
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.ts_us != y.ts_us) return x.ts_us < y.ts_us;
    return x.dur_us > y.dur_us;  // the enclosing one first
  });
  std::vector<size_t> open;  // events that may still hold later ones, innermost last
  std::vector<double> nested(events->size(), 0);
  size_t count = 0;
  int64_t tid = 0;
  for (size_t i : order) {
    const NodeEvent& e = (*events)[i];
    if (open.empty() || e.tid != tid) open.clear();
    tid = e.tid;
    while (!open.empty()) {
      const NodeEvent& top = (*events)[open.back()];
      if (e.ts_us >= top.ts_us && e.ts_us < top.ts_us + top.dur_us &&
          e.ts_us + e.dur_us <= top.ts_us + top.dur_us)
        break;
      open.pop_back();
    }
    if (!open.empty()) {
      nested[open.back()] += e.dur_us;
      ++count;
    }
    if (parent_row[static_cast<size_t>(e.row)]) open.push_back(i);
  }
  for (size_t i = 0; i < events->size(); ++i)
    (*events)[i].dur_us = std::max(0.0, (*events)[i].dur_us - nested[i]);
  return count;
}

// Reads thread_scheduling_stats; false when the value is empty or not the layout above.
bool ReadThreadStats(od::value v, ThreadStats* out) {
  std::string_view raw;
  od::object obj;
  if (v.get_object().get(obj) == simdjson::SUCCESS) {
    if (obj.raw_json().get(raw) != simdjson::SUCCESS) return false;
  } else if (v.get_string().get(raw) != simdjson::SUCCESS || raw.empty()) {
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(raw, nullptr, false);
  if (!j.is_object()) return false;
  auto num = [](const nlohmann::json& o, const char* k) {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number()) return 0.0;
    double d = it->get<double>();
    return std::isfinite(d) && d >= 0 && d < 1e15 ? d : 0.0;
  };
  if (auto m = j.find("main_thread"); m != j.end() && m->is_object()) {
    if (auto b = m->find("block_size"); b != m->end() && b->is_array()) {
      out->loops = static_cast<int>(std::min<size_t>(b->size(), 1 << 30));
      for (const auto& x : *b)
        if (x.is_number_integer() && x.get<int64_t>() > out->max_block)
          out->max_block = x.get<int64_t>();
    }
    out->distribution_us = num(*m, "Distribution") + num(*m, "DistributionEnqueue");
    out->run_us = num(*m, "Run");
    out->wait_us = num(*m, "Wait") + num(*m, "WaitRevoke");
    if (auto n = m->find("thread_pool_name"); n != m->end() && n->is_string())
      out->pool = n->get<std::string>();
  }
  if (auto st = j.find("sub_threads"); st != j.end() && st->is_object())
    for (auto it = st->begin(); it != st->end(); ++it)
      out->sub.push_back({it.key(), static_cast<int64_t>(num(it.value(), "num_run"))});
  return true;
}

// [{"float":[1,3,224,224]}, {"int64":[]}] -> shapes
void ReadShapes(od::value v, std::vector<std::vector<int64_t>>* out) {
  out->clear();
  for (od::value entry : v.get_array()) {
    std::vector<int64_t> dims;
    for (auto field : entry.get_object()) {
      for (od::value d : field.value().get_array()) {
        int64_t x = 0;
        if (d.get_int64().get(x) != simdjson::SUCCESS) {
          double f = d.get_double();
          // A dimension that is not a representable integer is unknown (0), not UB.
          x = std::isfinite(f) && std::fabs(f) < 9e18 ? static_cast<int64_t>(f) : 0;
        }
        dims.push_back(x);
      }
      break;
    }
    out->push_back(std::move(dims));
  }
}

double ReadNumber(od::value v) {
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  std::string_view s = v.get_string();  // some writers quote numbers
  double x = 0;
  if (!ParseDouble(s, &x)) return std::nan("");
  return x;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  profile::Profile p = util::NewProfile("ort", origin);
  std::vector<NodeRow> rows;
  std::unordered_map<std::string, int32_t> by_name;
  std::vector<NodeEvent> events;
  std::vector<ThreadStats> thread_stats;
  std::vector<ArenaReading> arena_readings;
  std::vector<std::pair<double, double>> runs;  // model_run [ts, ts+dur) in µs
  std::map<std::string, int> providers;
  std::vector<profile::GpuKernel> kernels;
  size_t n_events = 0, fences = 0, array_end = 0;
  od::parser parser;
  std::string_view text = src.bytes();
  Status st = json::ForEachElement(
      text, json::SkipSpace(text, 0), origin,
      [&](std::string_view element, size_t) -> Status {
        ++n_events;
        auto at = [&] { return origin + ": event #" + std::to_string(n_events); };
        return json::ParseElement(parser, element, at, [&](od::object& ev) -> Status {
          std::string_view cat;
          std::string name;
          double ts = 0, dur = 0, tid = 0;
          bool has_dur = false;
          NodeRow args_row;
          ArenaReading arena;
          ThreadStats tstats;
          bool has_tstats = false;
          int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
          for (auto field : ev) {
            std::string_view key = field.unescaped_key();
            if (key == "cat") {
              cat = field.value().get_string();
            } else if (key == "name") {
              name = std::string(std::string_view(field.value().get_string()));
            } else if (key == "ts") {
              ts = ReadNumber(field.value());
            } else if (key == "dur") {
              dur = ReadNumber(field.value());
              has_dur = true;
            } else if (key == "tid") {
              tid = ReadNumber(field.value());
            } else if (key == "args") {
              for (auto a : field.value().get_object()) {
                std::string_view ak = a.unescaped_key();
                if (ak == "op_name") {
                  args_row.op_type = std::string(std::string_view(a.value().get_string()));
                } else if (ak == "provider") {
                  args_row.provider = std::string(std::string_view(a.value().get_string()));
                } else if (ak == "input_type_shape") {
                  ReadShapes(a.value(), &args_row.in_shapes);
                } else if (ak == "output_type_shape") {
                  ReadShapes(a.value(), &args_row.out_shapes);
                } else if (ak == "node_index") {
                  double d = ReadNumber(a.value());
                  // In range before the cast (a float-to-int overflow is undefined); a
                  // negative index is no index.
                  if (std::isfinite(d) && d >= 0 && d < 9e18)
                    args_row.index = static_cast<int64_t>(d);
                } else if (ak == "activation_size" || ak == "parameter_size" ||
                           ak == "output_size") {
                  const double d = ReadNumber(a.value());
                  if (std::isfinite(d) && d >= 0 && d < 1e18)
                    (ak[0] == 'a'   ? args_row.activation_bytes
                     : ak[0] == 'p' ? args_row.parameter_bytes
                                    : args_row.output_bytes) = d;
                } else if (ak == "mem_bytes_in_use" || ak == "mem_in_use_peak" ||
                           ak == "mem_arena_held" || ak == "mem_in_use_delta") {
                  // Written as strings of integers; a delta may be negative.
                  const double d = ReadNumber(a.value());
                  if (std::isfinite(d) && std::fabs(d) < 1e18) {
                    if (ak == "mem_in_use_delta")
                      arena.in_use_delta = d;
                    else if (d >= 0)
                      (ak == "mem_bytes_in_use"  ? arena.in_use
                       : ak == "mem_in_use_peak" ? arena.peak
                                                 : arena.held) = d;
                  }
                } else if (ak == "thread_scheduling_stats") {
                  has_tstats = ReadThreadStats(a.value(), &tstats);
                  args_row.parallel = has_tstats && (tstats.loops > 0 || !tstats.sub.empty());
                } else if (ak == "grid_x" || ak == "grid_y" || ak == "grid_z" || ak == "block_x" ||
                           ak == "block_y" || ak == "block_z") {
                  double d = ReadNumber(a.value());
                  int32_t v = std::isfinite(d) && d >= 0 && d < 2e9 ? static_cast<int32_t>(d) : 0;
                  int axis = ak.back() - 'x';
                  (ak[0] == 'g' ? grid : block)[axis] = v;
                }
              }
            }
          }
          // Messages are built only on error (this runs once per event).
          auto where = [&] { return at() + " ('" + name + "')"; };
          auto check = [&](double v, const char* what) -> Status {
            if (std::isfinite(v) && v >= 0) return Status::Ok();
            return util::CheckTime(v, where(), what);
          };
          if (cat == "Session" && name == "model_run") {
            if (!has_dur) return DataLoss(where() + " has no \"dur\"");
            OPSCOPE_RETURN_IF_ERROR(check(dur, "duration"));
            OPSCOPE_RETURN_IF_ERROR(check(ts, "start"));
            runs.push_back({ts, ts + dur});
            return Status::Ok();
          }
          if (cat == "Kernel") {
            OPSCOPE_RETURN_IF_ERROR(check(dur, "duration"));
            OPSCOPE_RETURN_IF_ERROR(check(ts, "start"));
            if (ts > 9e15 || dur > 9e15) return DataLoss(where() + ": time out of range");
            profile::GpuKernel k;
            k.name = name;
            k.start_ns = static_cast<int64_t>(ts * 1000);
            k.end_ns = k.start_ns + static_cast<int64_t>(dur * 1000);
            for (int a = 0; a < 3; ++a) k.grid[a] = grid[a], k.block[a] = block[a];
            kernels.push_back(std::move(k));
            return Status::Ok();
          }
          if (cat != "Node") return Status::Ok();
          std::string_view n(name);
          if (EndsWith(n, "_fence_before") || EndsWith(n, "_fence_after")) {
            ++fences;
            return Status::Ok();
          }
          if (!EndsWith(n, "_kernel_time")) return Status::Ok();
          if (!has_dur) return DataLoss(where() + " has no \"dur\"");
          OPSCOPE_RETURN_IF_ERROR(check(dur, "duration"));
          if (!std::isfinite(ts)) return DataLoss(where() + ": start is not finite");
          std::string node(n.substr(0, n.size() - std::string_view("_kernel_time").size()));
          // Releases that named unnamed nodes "" write "_kernel_time": name them as the engine
          // does ("<op_type>_<node_index>").
          if (node.empty())
            node = (args_row.op_type.empty() ? std::string("node") : args_row.op_type) + "_" +
                   (args_row.index >= 0 ? std::to_string(args_row.index) : std::string("?"));
          auto [it, fresh] = by_name.emplace(node, static_cast<int32_t>(rows.size()));
          if (fresh) {
            args_row.name = node;
            rows.push_back(std::move(args_row));
          } else {
            NodeRow& r = rows[it->second];
            if (r.op_type.empty()) r.op_type = args_row.op_type;
            if (r.provider.empty()) r.provider = args_row.provider;
            if (r.in_shapes.empty()) r.in_shapes = std::move(args_row.in_shapes);
            if (r.out_shapes.empty()) r.out_shapes = std::move(args_row.out_shapes);
            r.parallel = r.parallel || args_row.parallel;
            r.activation_bytes = std::max(r.activation_bytes, args_row.activation_bytes);
            r.parameter_bytes = std::max(r.parameter_bytes, args_row.parameter_bytes);
            r.output_bytes = std::max(r.output_bytes, args_row.output_bytes);
          }
          int32_t stats_at = -1;
          if (has_tstats) {
            stats_at = static_cast<int32_t>(thread_stats.size());
            thread_stats.push_back(std::move(tstats));
          }
          int32_t arena_at = -1;
          if (arena.in_use >= 0 || arena.held >= 0) {
            arena_at = static_cast<int32_t>(arena_readings.size());
            arena_readings.push_back(arena);
          }
          const int64_t thread =
              std::isfinite(tid) && std::fabs(tid) < 9e18 ? static_cast<int64_t>(tid) : 0;
          events.push_back({it->second, ts, dur, stats_at, thread, arena_at});
          return Status::Ok();
        });
      },
      &array_end);
  if (!st.ok()) return st;
  if (json::SkipSpace(text, array_end) != text.size())
    return DataLoss(origin + ": unexpected data after the event array (byte " +
                    std::to_string(array_end) + ")");
  if (rows.empty())
    return DataLoss(origin +
                    ": the ONNX Runtime profile has no node events (\"cat\":\"Node\", "
                    "\"..._kernel_time\"): was the session run after profiling was enabled?");

  std::vector<bool> control_flow(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    control_flow[r] =
        rows[r].op_type == "If" || rows[r].op_type == "Loop" || rows[r].op_type == "Scan";
  if (const size_t nested = MakeParentsExclusive(&events, control_flow); nested > 0)
    p.meta.extra["ort.nested_events"] =
        std::to_string(nested) +
        " node events ran inside another node's event (If/Loop/Scan bodies): the parents' "
        "times exclude them, so no time is counted twice";
  // Runs: by model_run interval, else by occurrence.
  std::sort(runs.begin(), runs.end());
  size_t n_runs = runs.size();
  std::vector<int> occurrence(rows.size(), 0);
  int max_occ = 0;
  for (const NodeEvent& e : events) max_occ = std::max(max_occ, ++occurrence[e.row]);
  bool by_interval = n_runs > 0;
  if (!by_interval) n_runs = static_cast<size_t>(max_occ);
  std::vector<std::vector<double>> per_run(rows.size(), std::vector<double>(n_runs, 0.0));
  std::fill(occurrence.begin(), occurrence.end(), 0);
  // Thread-pool use per row, summed over its events (then divided by the runs): parallel loops,
  // threads that did work (the calling thread when it dispatched a loop, plus every sub-thread
  // whose run count went up since the previous node event), sub-thread runs, and the calling
  // thread's distribution / run / wait times.
  struct ThreadUse {
    double events = 0, loops = 0, threads = 0, max_threads = 0, sub_runs = 0, max_block = 0;
    double distribution_us = 0, run_us = 0, wait_us = 0;
  };
  std::vector<ThreadUse> use(rows.size());
  std::unordered_map<std::string, int64_t> last_runs;  // sub-thread id -> num_run seen last
  std::map<std::string, int> pools;
  for (const NodeEvent& e : events) {
    if (e.stats < 0) continue;
    const ThreadStats& t = thread_stats[static_cast<size_t>(e.stats)];
    ThreadUse& u = use[static_cast<size_t>(e.row)];
    double threads = t.loops > 0 ? 1 : 0, sub_runs = 0;
    for (const auto& [id, n] : t.sub) {
      int64_t& last = last_runs[id];
      if (n > last) {
        threads += 1;
        sub_runs += static_cast<double>(n - last);
      }
      last = std::max(last, n);
    }
    u.events += 1;
    u.loops += t.loops;
    u.threads += threads;
    u.max_threads = std::max(u.max_threads, threads);
    u.sub_runs += sub_runs;
    u.max_block = std::max(u.max_block, static_cast<double>(t.max_block));
    u.distribution_us += t.distribution_us;
    u.run_us += t.run_us;
    u.wait_us += t.wait_us;
    if (!t.pool.empty()) ++pools[t.pool];
  }
  size_t outside = 0;
  // The arena in use after each row's node in the first run, and whether that run followed
  // tensors (some delta not 0); the most the arena held and had in use over every run.
  std::vector<double> first_in_use(rows.size(), -1);
  bool first_run_tracks = false;
  double arena_held = -1, arena_peak = -1;
  for (const NodeEvent& e : events) {
    size_t r = 0;
    if (by_interval) {
      auto it = std::upper_bound(runs.begin(), runs.end(), std::make_pair(e.ts_us, 1e300));
      if (it == runs.begin() || e.ts_us > std::prev(it)->second) {
        ++outside;
        continue;
      }
      r = static_cast<size_t>(std::prev(it) - runs.begin());
    } else {
      r = static_cast<size_t>(occurrence[e.row]++);
    }
    per_run[e.row][r] += e.dur_us / 1000.0;
    if (e.arena >= 0) {
      const ArenaReading& a = arena_readings[static_cast<size_t>(e.arena)];
      arena_held = std::max(arena_held, a.held);
      arena_peak = std::max(arena_peak, a.peak);
      if (r == 0 && a.in_use >= 0) {
        double& v = first_in_use[static_cast<size_t>(e.row)];
        v = std::max(v, a.in_use);  // a node run several times in a run (a Loop body): the most
        first_run_tracks = first_run_tracks || a.in_use_delta != 0;
      }
    }
  }
  if (by_interval)
    for (const auto& [a, b] : runs) p.e2e.runs_ms.push_back((b - a) / 1000.0);
  p.meta.runs = static_cast<int>(n_runs);
  if (outside)
    p.meta.degradations.push_back(std::to_string(outside) +
                                  " node events lie outside every model_run and are not counted");
  if (!by_interval)
    p.meta.degradations.push_back(
        "no model_run events: runs are counted by each node's "
        "occurrences, and there are no end-to-end times");
  if (fences)
    p.meta.extra["ort.fence_events"] = std::to_string(fences) + " (synchronization, not counted)";

  // Rows in ORT's execution order: by each row's first start. (Not by node_index: that is the
  // node's index in ORT's graph, where the nodes its transformers create (fused kernels, inserted
  // reorders and reshapes) come after every node of the model, whenever they run.)
  std::vector<double> first_ts(rows.size(), std::numeric_limits<double>::infinity());
  for (const NodeEvent& e : events)
    first_ts[static_cast<size_t>(e.row)] = std::min(first_ts[static_cast<size_t>(e.row)], e.ts_us);
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return first_ts[a] < first_ts[b]; });
  int parallel = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    NodeRow& r = rows[order[k]];
    profile::OpRecord op;
    op.name = r.name;
    op.op_type = r.op_type.empty() ? "?" : r.op_type;
    op.index = static_cast<int>(k);
    op.input_shapes = std::move(r.in_shapes);
    op.output_shapes = std::move(r.out_shapes);
    op.runs_ms = std::move(per_run[order[k]]);
    op.step = r.name;
    op.attribution =
        "measured by ONNX Runtime" + (r.provider.empty() ? "" : " (" + r.provider + ")");
    if (!r.provider.empty()) ++providers[r.provider];
    parallel += r.parallel;
    if (const ThreadUse& u = use[order[k]]; u.events > 0) {
      // Per run, like every counter of an op (profile.h); max_threads and max_block are maxima.
      const double per = 1.0 / static_cast<double>(std::max<size_t>(n_runs, 1));
      op.counters["ort.parallel_loops"] = u.loops * per;
      op.counters["ort.threads_used"] = u.threads / u.events;
      op.counters["ort.threads_used_max"] = u.max_threads;
      op.counters["ort.sub_thread_runs"] = u.sub_runs * per;
      op.counters["ort.block_size_max"] = u.max_block;
      op.counters["ort.distribution_us"] = u.distribution_us * per;
      op.counters["ort.main_run_us"] = u.run_us * per;
      op.counters["ort.wait_us"] = u.wait_us * per;
    }
    p.ops.push_back(std::move(op));
  }
  // The memory section, from the per-node sizes (what each node reads and writes: its inputs,
  // weights and outputs) and, where ORT wrote them, the arena's statistics: the bytes in use
  // after each node of the first run are every activation alive then, not only the node's own.
  const bool sizes =
      std::any_of(rows.begin(), rows.end(), [](const NodeRow& r) { return r.output_bytes >= 0; });
  if (sizes || arena_held >= 0 || first_run_tracks) {
    memory::MemorySection m;
    m.device = providers.size() == 1 ? providers.begin()->first : "";
    if (first_run_tracks) {
      m.source = fmt::format(
          "ONNX Runtime profiler: live is the arena's bytes in use after each node of the first "
          "run (mem_bytes_in_use; later runs take one memory-pattern block up front{}), the arena "
          "is the most it held (mem_arena_held); allocated, weights: output_size, parameter_size",
          arena_peak > 0
              ? fmt::format(", and the most in use over every run was {:.0f} bytes", arena_peak)
              : std::string());
    } else {
      m.source =
          "ONNX Runtime profiler (activation_size, parameter_size, output_size per node: live is "
          "the node's inputs and outputs, not every tensor alive then" +
          std::string(arena_held >= 0 ? "; the first run in the file already used a cached "
                                        "memory pattern, so the arena's in-use bytes do not "
                                        "follow the nodes"
                                      : "") +
          ")";
    }
    for (size_t k = 0; k < order.size(); ++k) {
      const NodeRow& r = rows[order[k]];
      memory::MemStep st;
      st.name = r.name;
      st.op = static_cast<int>(k);
      st.allocated_bytes = std::max(0.0, r.output_bytes);
      st.weight_bytes = std::max(0.0, r.parameter_bytes);
      if (first_run_tracks && first_in_use[order[k]] >= 0)
        st.live_bytes = st.arena_live_bytes = first_in_use[order[k]];
      else
        st.live_bytes = std::max(0.0, r.activation_bytes) + st.allocated_bytes;
      m.weight_bytes += st.weight_bytes;
      m.steps.push_back(std::move(st));
    }
    m.arena_bytes = std::max(0.0, arena_held);
    memory::SetPeak(&m);
    p.sections.Get<memory::MemorySection>() = std::move(m);
  }
  std::vector<std::string> prov;
  for (const auto& [name, n] : providers) prov.push_back(name + ":" + std::to_string(n));
  if (!prov.empty()) p.meta.extra["ort.providers"] = Join(prov, " ");
  if (parallel) p.meta.extra["ort.parallel_nodes"] = std::to_string(parallel);
  if (!thread_stats.empty()) {
    std::vector<std::string> ps;
    for (const auto& [name, n] : pools) ps.push_back(name + ":" + std::to_string(n));
    p.meta.extra["ort.thread_stats"] = std::to_string(thread_stats.size()) +
                                       " node events with thread-pool statistics" +
                                       (ps.empty() ? std::string() : " (" + Join(ps, " ") + ")");
  }
  if (providers.empty() && rows.size())
    p.meta.extra["ort.layout"] =
        "args with op_name only (ONNX Runtime 1.x before shapes were "
        "recorded): no shapes or providers";
  if (!kernels.empty()) {
    p.gpu.emplace();
    p.gpu->kernels = std::move(kernels);
  }
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_ort = {"ort", "ONNX Runtime profiler JSON (enable_profiling)", Sniff,
                                   Parse};
}  // namespace formats

}  // namespace opscope::importers
