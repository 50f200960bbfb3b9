// PyTorch profiler Chrome traces (`prof.export_chrome_trace(path)`, tensorboard_trace_handler):
//
//   {"schemaVersion": 1, "deviceProperties": [...], "traceEvents": [
//     {"ph":"X", "cat":"cpu_op", "name":"aten::conv2d", "pid":1, "tid":1, "ts":12.5, "dur":80,
//      "args":{"External id":5, "Input Dims":[[1,3,224,224],[64,3,7,7],[],...], ...}},
//     {"ph":"X", "cat":"cuda_runtime", "name":"cudaLaunchKernel", "tid":1, "ts", "dur",
//      "args":{"External id":5, "correlation":311}},
//     {"ph":"X", "cat":"kernel", "name":"void implicit_convolve_sgemm<...>", "ts", "dur",
//      "args":{"correlation":311, "stream":7, "device":0, "grid":[..], "block":[..],
//              "registers per thread":64, "shared memory":0}},
//     {"ph":"X", "cat":"gpu_memcpy", "name":"Memcpy HtoD (Pageable -> Device)",
//      "args":{"correlation":..., "bytes":602112, "stream":7}},
//     {"ph":"X", "cat":"user_annotation", "name":"ProfilerStep#3", ...}, ...]}
// PyTorch before 1.9 wrote "Operator", "Runtime", "Kernel", "Memcpy", "Memset" as categories;
// the legacy autograd profiler wrote a bare array of CPU ops. Times are µs.
//
// Rows are the top-level CPU ops (not inside another op on their thread), one per op name and
// input shapes (like key_averages(group_by_input_shape=True)). With CUDA kernels in the trace a
// row's time is the device time of the kernels it launched — kernel -> runtime call by
// correlation id -> the op by External id (or by containment) -> its top-level op; CPU-only
// traces give the ops' inclusive CPU time. Runs are the ProfilerStep#N annotations (else one).
// Kernels, copies, memsets and runtime calls also fill the gpu section, every one of them (the
// profile writer streams its record arrays, profile_json.h).
//
// Streamed (json_scan.h): a 1 GB trace is read in one pass; memory is one compact record per
// op, runtime call and kernel (docs/benchmarks.md has the measured time and peak RSS).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/strings.h"
#include "importers/importer.h"
#include "importers/json_scan.h"
#include "sections/memory/memory_section.h"

namespace opscope::importers {
namespace {

namespace od = simdjson::ondemand;

int Sniff(std::string_view head, const std::string&) {
  size_t i = json::SkipSpace(head, 0);
  if (i >= head.size()) return kSniffNo;
  auto has = [&](std::string_view s) { return head.find(s) != std::string_view::npos; };
  if (head[i] == '{' && has("\"traceEvents\"")) {
    if (has("\"schemaVersion\"") || has("\"cpu_op\"") || has("\"deviceProperties\"") ||
        has("\"Operator\"") || has("\"ProfilerStep#") || has("\"aten::"))
      return kSniffCertain;
    return kSniffWeak;
  }
  if (head[i] == '[' && has("\"aten::") && has("\"ph\"") && !has("_kernel_time"))
    return kSniffLikely;
  return kSniffNo;
}

enum class Cat { kOther, kCpuOp, kRuntime, kKernel, kMemcpy, kMemset, kStep };

Cat CatOf(std::string_view cat, std::string_view name) {
  if (cat == "cpu_op" || cat == "Operator" || cat == "operator") return Cat::kCpuOp;
  if (cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver") return Cat::kRuntime;
  if (cat == "kernel" || cat == "Kernel") return Cat::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Cat::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Cat::kMemset;
  if ((cat == "user_annotation" || cat == "cpu_op" || cat.empty()) &&
      StartsWith(name, "ProfilerStep#"))
    return Cat::kStep;
  // The legacy autograd profiler wrote CPU ops without a category.
  if (cat.empty()) return Cat::kCpuOp;
  return Cat::kOther;
}

struct Interned {
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::string> names;
  uint32_t Id(std::string_view s) {
    auto it = ids.find(std::string(s));
    if (it != ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(names.size());
    names.emplace_back(s);
    ids.emplace(names.back(), id);
    return id;
  }
};

struct CpuOp {
  double ts, end;
  int64_t tid, ext;
  uint32_t name, dims;
  int32_t top = -1;
};
struct Runtime {
  double ts, end;
  int64_t tid, ext, corr;
  uint32_t name;
  bool driver;  // "cuda_driver" (cuLaunchKernel, ...), else the runtime API
};
// A `[memory]` instant event (profile_memory=True): an allocation (Bytes > 0) or a free
// (Bytes < 0) and the allocator's total after it, on one device.
struct MemEvent {
  double ts;
  int64_t tid, bytes, total, device_type, device_id;
};
struct Device {
  Cat cat;
  double ts, end, dur;  // dur kept as read: end - ts loses µs fractions at epoch-sized ts
  int64_t corr, stream, device, bytes;
  uint32_t name;
  int32_t grid[3], block[3], regs;
  int64_t shared;
};

int64_t AsInt(od::value v) {
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9e18)
    return static_cast<int64_t>(d);
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) {
    // "stream 7", "7"
    size_t k = s.find_first_of("0123456789");
    if (k != std::string_view::npos && ParseInt64(s.substr(k), &i)) return i;
  }
  return 0;
}

// The memory section from the `[memory]` events: the device with the most events (a GPU trace's
// CUDA allocator, else the CPU's), each event given to the top-level op running on its thread
// then. Per op: bytes allocated and freed per run, and the allocator's total while it ran (the
// total left by the last event before it, and every total inside it), the highest of its runs.
template <typename OpIndex>
void AddMemory(const std::vector<CpuOp>& ops, std::vector<MemEvent>& mems, size_t bad_mems,
               size_t n_runs, const OpIndex& op_index, profile::Profile* p) {
  if (bad_mems)
    p->meta.degradations.push_back(
        fmt::format("{} [memory] event(s) had no usable time or total and were skipped", bad_mems));
  if (mems.empty()) return;
  std::map<std::pair<int64_t, int64_t>, size_t> per_device;
  for (const MemEvent& m : mems) ++per_device[{m.device_type, m.device_id}];
  std::pair<int64_t, int64_t> device{0, 0};
  size_t most = 0;
  for (const auto& [d, n] : per_device)
    if (n > most || (n == most && d.first == 1)) most = n, device = d;
  std::vector<MemEvent> ev;
  for (const MemEvent& m : mems)
    if (m.device_type == device.first && m.device_id == device.second) ev.push_back(m);
  std::vector<MemEvent>().swap(mems);
  std::stable_sort(ev.begin(), ev.end(),
                   [](const MemEvent& a, const MemEvent& b) { return a.ts < b.ts; });

  memory::MemorySection m;
  // Device Type is c10's DeviceType: 0 CPU, 1 CUDA; others by number.
  m.device = device.first == 0   ? std::string("cpu")
             : device.first == 1 ? fmt::format("cuda:{}", device.second)
                                 : fmt::format("device type {}:{}", device.first, device.second);
  m.source = "PyTorch profiler [memory] events (profile_memory=True)";
  m.steps.resize(p->ops.size());
  for (size_t i = 0; i < p->ops.size(); ++i) {
    m.steps[i].name = p->ops[i].name;
    m.steps[i].op = static_cast<int>(i);
  }
  size_t attributed = 0;
  for (const CpuOp& o : ops) {
    if (o.top != &o - ops.data()) continue;
    const size_t at = op_index(o);
    if (at >= m.steps.size()) continue;  // outside every ProfilerStep: not counted, as its time
    memory::MemStep& st = m.steps[at];
    // The total when the op starts: the last event before it.
    auto it = std::lower_bound(ev.begin(), ev.end(), o.ts,
                               [](const MemEvent& e, double t) { return e.ts < t; });
    double live = it == ev.begin() ? 0 : static_cast<double>(std::prev(it)->total);
    for (; it != ev.end() && it->ts <= o.end; ++it) {
      if (it->tid != o.tid) continue;
      ++attributed;
      live = std::max(live, static_cast<double>(it->total));
      if (it->bytes > 0)
        st.allocated_bytes += static_cast<double>(it->bytes) / static_cast<double>(n_runs);
      else
        st.released_bytes += static_cast<double>(-it->bytes) / static_cast<double>(n_runs);
    }
    st.live_bytes = std::max(st.live_bytes, live);
  }
  memory::SetPeak(&m);
  if (attributed < ev.size())
    p->meta.degradations.push_back(fmt::format(
        "{} of {} [memory] events of {} happened outside every top-level op on their thread "
        "(allocations by the framework itself, or a thread without ops)",
        ev.size() - attributed, ev.size(), m.device));
  if (per_device.size() > 1)
    p->meta.degradations.push_back(
        fmt::format("[memory] events of {} devices: the memory section shows {} ({} events)",
                    per_device.size(), m.device, ev.size()));
  if (m.steps.empty()) return;
  p->sections.Get<memory::MemorySection>() = std::move(m);
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  size_t pos = json::SkipSpace(text, 0);
  if (pos < text.size() && text[pos] == '{') {
    pos = json::FindTopLevelKey(text, "traceEvents");
    if (pos == std::string_view::npos)
      return DataLoss(origin +
                      ": no \"traceEvents\" array at the top level (truncated or not a "
                      "Chrome trace?)");
  }
  Interned strings;
  std::vector<CpuOp> ops;
  std::vector<Runtime> rts;
  std::vector<Device> devs;
  std::vector<std::pair<double, double>> steps;
  std::vector<MemEvent> mems;
  size_t bad_mems = 0;
  od::parser parser;
  size_t n_events = 0;
  std::unordered_map<std::string_view, uint32_t> dims_ids;  // raw "Input Dims" text -> id
  std::vector<std::string_view> dims_text;
  Status st = json::ForEachElement(
      text, pos, origin,
      [&](std::string_view el, size_t) -> Status {
        ++n_events;
        auto at = [&] { return origin + ": event #" + std::to_string(n_events); };
        // Most events of a trace are not read here (python_function, flow events, ...): their
        // category decides without a parse.
        std::string_view raw_name = json::RawField(el, "name");
        if (raw_name == "\"[memory]\"")
          return json::ParseElement(parser, el, at, [&](od::object& ev) -> Status {
            MemEvent m{std::nan(""), 0, 0, -1, 0, 0};
            for (auto field : ev) {
              std::string_view key = field.unescaped_key();
              if (key == "ts") {
                double d = 0;
                if (field.value().get_double().get(d) == simdjson::SUCCESS) m.ts = d;
              } else if (key == "tid") {
                m.tid = AsInt(field.value());
              } else if (key == "args") {
                od::object args;
                if (field.value().get_object().get(args) != simdjson::SUCCESS) continue;
                for (auto a : args) {
                  std::string_view ak = a.unescaped_key();
                  if (ak == "Bytes")
                    m.bytes = AsInt(a.value());
                  else if (ak == "Total Allocated")
                    m.total = AsInt(a.value());
                  else if (ak == "Device Type")
                    m.device_type = AsInt(a.value());
                  else if (ak == "Device Id")
                    m.device_id = AsInt(a.value());
                }
              }
            }
            // An event without a time or a total says nothing usable: skipped, counted.
            if (std::isfinite(m.ts) && m.ts >= 0 && m.ts <= 9e15 && m.total >= 0)
              mems.push_back(m);
            else
              ++bad_mems;
            return Status::Ok();
          });
        std::string_view raw_cat = json::RawField(el, "cat");
        if (raw_cat.size() >= 2) {
          std::string_view c = raw_cat.substr(1, raw_cat.size() - 2);
          std::string_view n = raw_name.size() >= 2 ? raw_name.substr(1, raw_name.size() - 2) : "";
          if (CatOf(c, n) == Cat::kOther) return Status::Ok();
        }
        // Input dims are kept by their text (interned), not parsed per event.
        uint32_t dims_id = 0;
        std::string_view raw_dims = json::RawField(el, "Input Dims");
        if (raw_dims.empty()) raw_dims = json::RawField(el, "Input dims");
        if (!raw_dims.empty()) {
          auto [it, fresh] =
              dims_ids.emplace(raw_dims, static_cast<uint32_t>(dims_text.size() + 1));
          if (fresh) dims_text.push_back(raw_dims);
          dims_id = it->second;
        }
        return json::ParseElement(parser, el, at, [&](od::object& ev) -> Status {
          std::string_view cat, name, ph;
          double ts = 0, dur = 0;
          bool has_ts = false;
          int64_t tid = 0, ext = -1, corr = -1, stream = 0, device = 0, bytes = 0, regs = 0,
                  shared = 0;
          int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
          std::string name_copy;
          for (auto field : ev) {
            std::string_view key = field.unescaped_key();
            if (key == "cat") {
              cat = field.value().get_string();  // valid while this element is parsed
            } else if (key == "name") {
              name_copy = std::string(std::string_view(field.value().get_string()));
            } else if (key == "ph") {
              ph = field.value().get_string();
              ph = ph == "X" ? "X" : "?";
            } else if (key == "ts") {
              double d = 0;
              if (field.value().get_double().get(d) != simdjson::SUCCESS) {
                std::string_view s = field.value().get_string();
                if (!ParseDouble(s, &d)) d = std::nan("");
              }
              ts = d;
              has_ts = true;
            } else if (key == "dur") {
              double d = 0;
              if (field.value().get_double().get(d) != simdjson::SUCCESS) d = std::nan("");
              dur = d;
            } else if (key == "tid") {
              tid = AsInt(field.value());
            } else if (key == "args") {
              od::object args;
              if (field.value().get_object().get(args) != simdjson::SUCCESS) continue;
              for (auto a : args) {
                std::string_view ak = a.unescaped_key();
                if (ak == "External id")
                  ext = AsInt(a.value());
                else if (ak == "correlation")
                  corr = AsInt(a.value());
                else if (ak == "stream")
                  stream = AsInt(a.value());
                else if (ak == "device")
                  device = AsInt(a.value());
                else if (ak == "bytes")
                  bytes = AsInt(a.value());
                else if (ak == "registers per thread")
                  regs = AsInt(a.value());
                else if (ak == "shared memory")
                  shared = AsInt(a.value());
                else if (ak == "grid" || ak == "block") {
                  int32_t* out = ak == "grid" ? grid : block;
                  int k = 0;
                  for (od::value d : a.value().get_array()) {
                    int64_t x = AsInt(d);
                    if (k < 3) out[k++] = x >= 0 && x < (1LL << 31) ? static_cast<int32_t>(x) : 0;
                  }
                }
              }
            }
          }
          name = name_copy;
          if (ph != "X") return Status::Ok();
          Cat c = CatOf(cat, name);
          if (c == Cat::kOther) return Status::Ok();
          auto where = [&] { return at() + " ('" + name_copy + "')"; };
          if (!has_ts) return DataLoss(where() + " has no \"ts\"");
          if (!(std::isfinite(ts) && ts >= 0)) return util::CheckTime(ts, where(), "start (ts)");
          if (!(std::isfinite(dur) && dur >= 0))
            return util::CheckTime(dur, where(), "duration (dur)");
          if (ts > 9e15 || dur > 9e15) return DataLoss(where() + ": time out of range");
          const double end = ts + dur;
          switch (c) {
            case Cat::kStep:
              steps.push_back({ts, end});
              break;
            case Cat::kCpuOp:
              ops.push_back({ts, end, tid, ext, strings.Id(name), dims_id});
              break;
            case Cat::kRuntime:
              rts.push_back({ts, end, tid, ext, corr, strings.Id(name), cat == "cuda_driver"});
              break;
            default: {
              Device d{c,      ts,    end,
                       dur,    corr,  stream,
                       device, bytes, strings.Id(name),
                       {},     {},    static_cast<int32_t>(regs),
                       shared};
              for (int k = 0; k < 3; ++k) d.grid[k] = grid[k], d.block[k] = block[k];
              devs.push_back(d);
            }
          }
          return Status::Ok();
        });
      },
      nullptr, [&](size_t offset) { src.ReleaseBefore(offset); });
  if (!st.ok()) return st;
  if (ops.empty() && devs.empty())
    return DataLoss(origin +
                    ": the trace has no CPU ops (cpu_op) or GPU activity: was it "
                    "written by torch.profiler with record_shapes/activities set?");

  // Top-level op of every op: per thread, by start (longer first at equal start).
  std::vector<int32_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (ops[a].tid != ops[b].tid) return ops[a].tid < ops[b].tid;
    if (ops[a].ts != ops[b].ts) return ops[a].ts < ops[b].ts;
    return ops[a].end > ops[b].end;
  });
  {
    int32_t top = -1;
    for (int32_t i : order) {
      if (top >= 0 && ops[top].tid == ops[i].tid && ops[i].ts >= ops[top].ts &&
          ops[i].end <= ops[top].end)
        ops[i].top = top;
      else
        ops[i].top = top = i;
    }
  }
  std::sort(steps.begin(), steps.end());
  auto run_of = [&](double ts) -> int64_t {
    if (steps.empty()) return 0;
    auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(ts, 1e300));
    if (it == steps.begin()) return -1;
    --it;
    return ts <= it->second ? it - steps.begin() : -1;
  };
  const size_t n_runs = steps.empty() ? 1 : steps.size();

  // Rows: top-level ops by (name, dims).
  std::map<std::pair<uint32_t, uint32_t>, size_t> row_of;
  std::vector<std::pair<uint32_t, uint32_t>> row_keys;
  auto row_for = [&](const CpuOp& o) {
    auto [it, fresh] = row_of.emplace(std::make_pair(o.name, o.dims), row_keys.size());
    if (fresh) row_keys.push_back({o.name, o.dims});
    return it->second;
  };
  std::vector<std::vector<double>> cpu_ms, gpu_ms;
  std::vector<size_t> kernels_of;
  auto grow = [&](size_t r) {
    while (cpu_ms.size() <= r) {
      cpu_ms.emplace_back(n_runs, 0.0);
      gpu_ms.emplace_back(n_runs, 0.0);
      kernels_of.push_back(0);
    }
  };
  std::unordered_map<int64_t, int32_t> op_by_ext;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].ext >= 0) op_by_ext[ops[i].ext] = static_cast<int32_t>(i);
  size_t outside = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].top != static_cast<int32_t>(i)) continue;
    size_t r = row_for(ops[i]);
    grow(r);
    int64_t run = run_of(ops[i].ts);
    if (run < 0) {
      ++outside;
      continue;
    }
    cpu_ms[r][run] += (ops[i].end - ops[i].ts) / 1000.0;
  }
  // Runtime call -> op: by External id, else the innermost op containing it on its thread.
  std::unordered_map<int64_t, int32_t> op_by_corr;
  for (const Runtime& rt : rts) {
    if (rt.corr < 0) continue;
    int32_t op = -1;
    if (auto it = op_by_ext.find(rt.ext); rt.ext >= 0 && it != op_by_ext.end()) op = it->second;
    if (op < 0) {
      // Binary search in the per-thread order for the last op starting before the call.
      auto it = std::upper_bound(order.begin(), order.end(), rt, [&](const Runtime& x, int32_t b) {
        if (x.tid != ops[b].tid) return x.tid < ops[b].tid;
        return x.ts < ops[b].ts;
      });
      if (it != order.begin()) {
        int32_t cand = *std::prev(it);
        if (ops[cand].tid == rt.tid) {
          int32_t t = ops[cand].top;
          if (rt.ts >= ops[t].ts && rt.end <= ops[t].end) op = cand;
        }
      }
    }
    if (op >= 0) op_by_corr[rt.corr] = op;
  }
  size_t linked = 0, kernels = 0;
  for (const Device& d : devs) {
    if (d.cat != Cat::kKernel && d.cat != Cat::kMemcpy && d.cat != Cat::kMemset) continue;
    if (d.cat == Cat::kKernel) ++kernels;
    auto it = op_by_corr.find(d.corr);
    if (it == op_by_corr.end()) continue;
    const CpuOp& top = ops[ops[it->second].top];
    size_t r = row_for(top);
    grow(r);
    int64_t run = run_of(top.ts);
    if (run < 0) continue;
    gpu_ms[r][run] += d.dur / 1000.0;
    ++kernels_of[r];
    ++linked;
  }
  profile::Profile p = util::NewProfile("pytorch", origin);
  const bool gpu_time = kernels > 0;
  std::map<std::string, size_t> by_final_name;  // the same shapes written two ways: one row
  std::vector<size_t> op_of_row(row_keys.size(), 0);
  for (size_t r = 0; r < row_keys.size(); ++r) {
    const auto& [name, dims] = row_keys[r];
    profile::OpRecord op;
    const std::string& n = strings.names[name];
    std::string ds;
    std::vector<std::vector<int64_t>> shapes;
    if (dims > 0 && dims <= dims_text.size()) {
      // [[1,3,224,224],[64,3,7,7],[],...] -> shapes and "1x3x224x224, 64x3x7x7, , ..."
      nlohmann::json dj = nlohmann::json::parse(dims_text[dims - 1], nullptr, false);
      std::vector<std::string> parts;
      if (dj.is_array())
        for (const auto& in : dj) {
          std::vector<int64_t> shape;
          if (in.is_array())
            for (const auto& d : in) shape.push_back(d.is_number_integer() ? d.get<int64_t>() : 0);
          parts.push_back(ShapeToString(shape));
          shapes.push_back(std::move(shape));
        }
      ds = Join(parts, ", ");
    }
    op.name = ds.empty() ? n : n + " [" + ds + "]";
    if (auto it = by_final_name.find(op.name); it != by_final_name.end()) {
      op_of_row[r] = it->second;
      auto& runs = p.ops[it->second].runs_ms;
      const auto& add = gpu_time ? gpu_ms[r] : cpu_ms[r];
      for (size_t k = 0; k < runs.size() && k < add.size(); ++k) runs[k] += add[k];
      continue;
    }
    by_final_name[op.name] = p.ops.size();
    op_of_row[r] = p.ops.size();
    op.op_type = n;
    op.index = static_cast<int>(p.ops.size());
    op.input_shapes = std::move(shapes);
    op.runs_ms = gpu_time ? gpu_ms[r] : cpu_ms[r];
    op.step = n;
    op.attribution = gpu_time ? fmt::format(
                                    "GPU time of the {} kernels/copies it launched "
                                    "(correlation ids); CPU time {}",
                                    kernels_of[r], HumanMs(cpu_ms[r].empty() ? 0 : cpu_ms[r][0]))
                              : "inclusive CPU time (PyTorch profiler)";
    p.ops.push_back(std::move(op));
  }
  for (const auto& [a, b] : steps) p.e2e.runs_ms.push_back((b - a) / 1000.0);
  p.meta.runs = static_cast<int>(n_runs);
  AddMemory(
      ops, mems, bad_mems, n_runs,
      [&](const CpuOp& o) {
        return run_of(o.ts) < 0 ? SIZE_MAX : op_of_row[row_of.at({o.name, o.dims})];
      },
      &p);
  p.meta.extra["pytorch.events"] = std::to_string(n_events);
  p.meta.extra["pytorch.cpu_ops"] = std::to_string(ops.size());
  if (gpu_time) {
    p.meta.extra["pytorch.gpu_linked"] = fmt::format("{} of {} GPU records", linked, devs.size());
    if (linked < devs.size())
      p.meta.degradations.push_back(fmt::format(
          "{} of {} GPU kernels/copies could not be linked to a CPU op (no runtime call with "
          "their correlation id, or it ran outside every op)",
          devs.size() - linked, devs.size()));
  }
  if (outside)
    p.meta.degradations.push_back(std::to_string(outside) +
                                  " top-level ops ran outside every "
                                  "ProfilerStep and are not counted");
  if (steps.empty())
    p.meta.degradations.push_back("no ProfilerStep#N annotations: the whole trace is one run");
  // The gpu section: every record.
  if (!devs.empty() || !rts.empty()) {
    p.gpu.emplace();
    size_t n_kernels = 0;
    for (const Device& d : devs) n_kernels += d.cat == Cat::kKernel;
    p.gpu->kernels.reserve(n_kernels);
    p.gpu->api_calls.reserve(rts.size());
    for (const Device& d : devs) {
      const int64_t s = static_cast<int64_t>(d.ts * 1000), e = s + std::llround(d.dur * 1000);
      if (d.cat == Cat::kKernel) {
        profile::GpuKernel k;
        k.name = strings.names[d.name];
        k.device = static_cast<int32_t>(d.device);
        k.stream = static_cast<int32_t>(d.stream);
        k.start_ns = s;
        k.end_ns = e;
        for (int a = 0; a < 3; ++a) k.grid[a] = d.grid[a], k.block[a] = d.block[a];
        k.registers_per_thread = std::max(0, d.regs);
        k.static_shared_bytes = std::max<int64_t>(0, d.shared);
        k.correlation_id = static_cast<uint32_t>(d.corr);
        p.gpu->kernels.push_back(std::move(k));
      } else if (d.cat == Cat::kMemcpy) {
        profile::GpuMemcpy m;
        const std::string& n = strings.names[d.name];
        for (const char* kind : {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"})
          if (n.find(kind) != std::string::npos) m.kind = kind;
        if (m.kind.empty()) m.kind = "other";
        m.pageable = n.find("Pageable") != std::string::npos;
        m.bytes = std::max<int64_t>(0, d.bytes);
        m.device = static_cast<int32_t>(d.device);
        m.stream = static_cast<int32_t>(d.stream);
        m.start_ns = s;
        m.end_ns = e;
        m.correlation_id = static_cast<uint32_t>(d.corr);
        p.gpu->memcpys.push_back(std::move(m));
      } else if (d.cat == Cat::kMemset) {
        profile::GpuMemset m;
        m.bytes = std::max<int64_t>(0, d.bytes);
        m.device = static_cast<int32_t>(d.device);
        m.stream = static_cast<int32_t>(d.stream);
        m.start_ns = s;
        m.end_ns = e;
        m.correlation_id = static_cast<uint32_t>(d.corr);
        p.gpu->memsets.push_back(m);
      }
    }
    std::vector<Device>().swap(devs);
    for (size_t i = 0; i < rts.size(); ++i) {
      profile::GpuApiCall a;
      a.name = strings.names[rts[i].name];
      a.api = rts[i].driver ? "driver" : "runtime";
      a.tid = static_cast<int32_t>(rts[i].tid);
      a.start_ns = static_cast<int64_t>(rts[i].ts * 1000);
      a.end_ns = a.start_ns + std::llround((rts[i].end - rts[i].ts) * 1000);
      a.correlation_id = static_cast<uint32_t>(rts[i].corr);
      p.gpu->api_calls.push_back(std::move(a));
    }
  }
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_pytorch = {"pytorch",
                                       "PyTorch profiler Chrome trace "
                                       "(export_chrome_trace)",
                                       Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
