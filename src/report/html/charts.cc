#include "report/html/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "analysis/roofline.h"
#include "base/strings.h"
#include "report/html/html_page.h"
#include "report/html/html_report.h"

namespace opscope::report::html {
namespace {

double OpMs(const profile::OpRecord& op) {
  return op.status == profile::OpStatus::kFolded ? 0 : op.stats.trimmed_mean;
}

const char* ClassCss(analysis::BoundClass c) {
  switch (c) {
    case analysis::BoundClass::kCompute:
      return "c-compute";
    case analysis::BoundClass::kMemory:
      return "c-memory";
    case analysis::BoundClass::kLatency:
      return "c-latency";
    case analysis::BoundClass::kDataMovement:
      return "c-data";
    default:
      return "c-unknown";
  }
}

std::string Short(double v) {
  if (v >= 1000) return Num(v, 0);
  if (v >= 10) return Num(v, 1);
  if (v >= 1) return Num(v, 2);
  return fmt::format("{:.3g}", v);
}

// A stable colour per name (warm hues, like flame graphs).
std::string FlameColour(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return fmt::format("hsl({},{}%,{}%)", 8 + h % 42, 62 + (h >> 8) % 20, 56 + (h >> 16) % 12);
}

}  // namespace

std::string RooflineSection(const profile::Profile& p) {
  std::string out = "<section id=\"roofline\" class=\"deferred\">\n<h2>Roofline</h2>\n";
  const auto& ceil = p.meta.machine;
  const bool have_ceilings = ceil && ceil->Usable();
  struct Pt {
    int op;
    double x, y, share, ms, gbps, pct;
    analysis::BoundClass cls;
    std::string reason;
  };
  std::vector<Pt> pts;
  int no_arith = 0;
  if (have_ceilings) {
    for (const auto& r : analysis::RooflineForDisplay(p, *ceil)) {
      if (r.intensity > 0 && r.achieved_gflops > 0)
        pts.push_back({r.op, r.intensity, r.achieved_gflops, r.share, r.time_ms, r.achieved_gbps,
                       r.pct_of_roof, r.cls, r.reason});
      else
        ++no_arith;
    }
  } else {
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const auto& op = p.ops[i];
      double ms = OpMs(op);
      if (ms <= 0) continue;
      if (op.flops > 0 && op.bytes > 0)
        pts.push_back({static_cast<int>(i), op.flops / op.bytes, op.flops / (ms / 1e3) / 1e9,
                       op.share, ms, op.bytes / (ms / 1e3) / 1e9, 0, analysis::BoundClass::kUnknown,
                       ""});
      else if (op.bytes > 0)
        ++no_arith;
    }
  }
  if (pts.empty()) {
    out +=
        "<p class=\"muted\">Nothing to plot: no op has both FLOPs and bytes with a measured time";
    out += p.ops.empty() ? " (this profile has no per-op data).</p>\n" : ".</p>\n";
    return out + "</section>\n";
  }
  double xmin = std::numeric_limits<double>::max(), xmax = 0,
         ymin = std::numeric_limits<double>::max(), ymax = 0;
  double max_share = 0;
  for (const auto& q : pts) {
    xmin = std::min(xmin, q.x);
    xmax = std::max(xmax, q.x);
    ymin = std::min(ymin, q.y);
    ymax = std::max(ymax, q.y);
    max_share = std::max(max_share, q.share);
  }
  double peak = 0, bw = 0, llc = 0;
  if (have_ceilings) {
    peak = ceil->PeakGflops(p.meta.threads);
    bw = ceil->triad_gbps;
    llc = ceil->llc_gbps;
    ymax = std::max(ymax, peak);
    xmin = std::min(xmin, peak / bw);
    xmax = std::max(xmax, peak / bw);
  }
  const double lx0 = std::floor(std::log10(xmin)),
               lx1 = std::max(lx0 + 1, std::ceil(std::log10(xmax)));
  const double ly0 = std::floor(std::log10(ymin)),
               ly1 = std::max(ly0 + 1, std::ceil(std::log10(ymax * 1.05)));
  const double W = 720, H = 420, L = 60, R = 16, T = 14, B = 44;
  auto X = [&](double v) { return L + (std::log10(v) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto Y = [&](double v) { return H - B - (std::log10(v) - ly0) / (ly1 - ly0) * (H - T - B); };
  out += fmt::format(
      "<svg class=\"chart roofline\" id=\"roofline-chart\" role=\"img\" aria-label=\"roofline "
      "plot\" "
      "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\">\n",
      Num(W), Num(H));
  for (double e = lx0; e <= lx1; e += 1) {
    double x = X(std::pow(10, e));
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/><text x=\"{0}\" "
        "y=\"{3}\" "
        "text-anchor=\"middle\">{4}</text>\n",
        Num(x, 1), Num(T), Num(H - B), Num(H - B + 14), Escape(Short(std::pow(10, e))));
  }
  for (double e = ly0; e <= ly1; e += 1) {
    double y = Y(std::pow(10, e));
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/><text x=\"{3}\" "
        "y=\"{4}\" "
        "text-anchor=\"end\">{5}</text>\n",
        Num(L), Num(W - R), Num(y, 1), Num(L - 5), Num(y + 4, 1), Escape(Short(std::pow(10, e))));
  }
  out += fmt::format("<rect class=\"axis\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                     Num(L), Num(T), Num(W - L - R), Num(H - T - B));
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
      Num((L + W - R) / 2), Num(H - 8));
  out += fmt::format(
      "<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">achieved "
      "GFLOP/s</text>\n",
      Num((T + H - B) / 2));
  const double xa = std::pow(10, lx0), xb = std::pow(10, lx1);
  auto roof = [&](double gbps, const char* cls, const std::string& title) {
    if (gbps <= 0) return;
    std::string pts_attr;
    double ridge = peak / gbps;
    std::vector<double> xs = {xa};
    if (ridge > xa && ridge < xb) xs.push_back(ridge);
    xs.push_back(xb);
    for (double x : xs) {
      double y = std::min(peak, x * gbps);
      y = std::max(y, std::pow(10, ly0));
      pts_attr += Num(X(x), 1) + "," + Num(Y(y), 1) + " ";
    }
    out += fmt::format("<polyline class=\"{}\" points=\"{}\"><title>{}</title></polyline>\n", cls,
                       pts_attr, Escape(title));
  };
  if (have_ceilings) {
    roof(llc, "roof-llc",
         fmt::format("roof with the last-level-cache bandwidth {} GB/s", Short(llc)));
    roof(bw, "roof",
         fmt::format("roof: peak {} GFLOP/s ({} threads), DRAM triad {} GB/s, ridge {} FLOP/B",
                     Short(peak), p.meta.threads, Short(bw), Short(peak / bw)));
  }
  // Largest first so small points stay on top and clickable.
  std::vector<size_t> order(pts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pts[a].share > pts[b].share; });
  for (size_t i : order) {
    const Pt& q = pts[i];
    const auto& op = p.ops[q.op];
    double r = 2.5 + 11 * std::sqrt(max_share > 0 ? q.share / max_share : 0);
    std::string title = fmt::format(
        "{} ({})\n{} per run, {:.1f}% of op time\n{} FLOP/B, {} GFLOP/s, {} GB/s", op.name,
        op.op_type, HumanMs(q.ms), q.share * 100, Short(q.x), Short(q.y), Short(q.gbps));
    if (have_ceilings)
      title += fmt::format("\n{} at {:.0f}% of its roof: {}", analysis::BoundClassName(q.cls),
                           q.pct, q.reason);
    out += fmt::format(
        "<a href=\"#op-{}\"><circle class=\"pt {}\" cx=\"{}\" cy=\"{}\" "
        "r=\"{}\"><title>{}</title></circle></a>\n",
        q.op, ClassCss(q.cls), Num(X(q.x), 1), Num(Y(q.y), 1), Num(r, 1), Escape(title));
  }
  out += "</svg>\n";
  if (have_ceilings) {
    out +=
        "<p class=\"legend\"><span><i class=\"c-compute\" "
        "style=\"background:#c0392b\"></i>compute-bound</span>"
        "<span><i style=\"background:#2f6db3\"></i>memory-bound</span><span><i "
        "style=\"background:#8e44ad\"></i>"
        "latency-bound</span><span><i style=\"background:#e67e22\"></i>data movement</span></p>\n";
    std::string c = fmt::format("Ceilings: peak {} GFLOP/s with {} thread(s), DRAM triad {} GB/s",
                                Short(peak), p.meta.threads, Short(bw));
    if (llc > 0) c += fmt::format(", last-level cache {} GB/s (dashed)", Short(llc));
    c += " (" + (ceil->method.empty() ? std::string("measured") : ceil->method) +
         (ceil->cpu_model.empty() ? "" : ", " + ceil->cpu_model) + ").";
    out += "<p class=\"muted\">" + Escape(c) +
           " Point area follows the op's share of time; hover for details, click to find the op in "
           "the table.</p>\n";
  } else {
    out +=
        "<p class=\"note\">No machine ceilings in this profile, so the roofs are not drawn and ops "
        "are not "
        "classified: run <code>opscope machine</code> before profiling, or pass "
        "<code>--peak-gflops</code>/<code>--peak-gbps</code>.</p>\n";
  }
  if (no_arith)
    out += fmt::format(
        "<p class=\"muted\">{} op(s) without arithmetic (pure data movement or no FLOPs) are not "
        "on "
        "the log-log plot.</p>\n",
        no_arith);
  return out + "</section>\n";
}

FlameNode* FlameNode::Child(const std::string& child_name) {
  for (auto& c : children)
    if (c.name == child_name) return &c;
  children.push_back(FlameNode{child_name, 0, {}});
  return &children.back();
}

FlameNode BuildFlameTree(const profile::Profile& p, std::string* what, std::string* unit) {
  FlameNode root;
  if (p.samples && !p.samples->samples.empty()) {
    const auto& s = *p.samples;
    root.name = "all samples";
    *what = fmt::format("{} call-stack samples ({}, {} call graph), root at the top",
                        s.samples.size(), s.event, s.call_graph.empty() ? "fp" : s.call_graph);
    *unit = s.unit;
    std::vector<std::string> labels(s.frames.size());
    for (size_t i = 0; i < s.frames.size(); ++i) {
      const auto& f = s.frames[i];
      labels[i] = f.module.empty() ? f.function : f.function + " [" + f.module + "]";
    }
    for (const auto& smp : s.samples) {
      root.value += smp.weight;
      FlameNode* cur = &root;
      for (auto it = smp.stack.rbegin(); it != smp.stack.rend(); ++it) {
        cur = cur->Child(*it < labels.size() ? labels[*it] : "[bad frame]");
        cur->value += smp.weight;
      }
    }
    return root;
  }
  root.name = "all ops";
  *what =
      "no call-stack samples in this profile: the op hierarchy by name scope, weighted by trimmed "
      "mean time";
  *unit = "ms";
  for (const auto& op : p.ops) {
    double ms = OpMs(op);
    if (ms <= 0) continue;
    root.value += ms;
    FlameNode* cur = &root;
    for (const auto& part : ScopeParts(op.name)) {
      cur = cur->Child(part);
      cur->value += ms;
    }
  }
  return root;
}

namespace {

void LayoutFlame(const FlameNode& n, double x, double total, int depth, double width,
                 const std::string& unit, std::string* out, int* shown, int* max_depth) {
  const double w = n.value / total;
  if (w * width < 0.4 || depth > 96) return;
  ++*shown;
  *max_depth = std::max(*max_depth, depth);
  const double row = 18;
  const double px = w * width;
  std::string label;
  size_t chars = px > 6 ? static_cast<size_t>((px - 6) / 6.5) : 0;
  if (chars >= 3) label = n.name.size() <= chars ? n.name : n.name.substr(0, chars - 1) + "…";
  std::string value = unit == "ms"   ? HumanMs(n.value)
                      : unit == "ns" ? HumanMs(n.value / 1e6)
                                     : HumanCount(n.value) + " " + unit;
  *out += fmt::format(
      "<g class=\"fr\" data-x=\"{}\" data-w=\"{}\" data-d=\"{}\" "
      "data-n=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" "
      "width=\"{}\" height=\"{}\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>\n",
      Num(x, 7), Num(w, 7), depth, Escape(n.name),
      Escape(fmt::format("{}: {} ({:.2f}%)", n.name, value, w * 100)), Num(x * width, 2),
      Num(depth * row, 1), Num(std::max(0.0, px - 0.5), 2), Num(row - 1), FlameColour(n.name),
      Num(x * width + 3, 2), Num(depth * row + 12.5, 1), Escape(label));
  double cx = x;
  for (const auto& c : n.children) {
    LayoutFlame(c, cx, total, depth + 1, width, unit, out, shown, max_depth);
    cx += c.value / total;
  }
}

}  // namespace

std::string FlameSection(const profile::Profile& p) {
  std::string out = "<section id=\"flame\" class=\"deferred\">\n<h2>Flame graph</h2>\n";
  std::string what, unit;
  FlameNode root = BuildFlameTree(p, &what, &unit);
  if (root.value <= 0) {
    out +=
        "<p class=\"muted\">Nothing to draw: no call-stack samples and no op with a measured "
        "time.</p>\n";
    return out + "</section>\n";
  }
  const double width = 1200;
  std::string frames;
  int shown = 0, max_depth = 0;
  LayoutFlame(root, 0, root.value, 0, width, unit, &frames, &shown, &max_depth);
  const double height = (max_depth + 1) * 18 + 2;
  out +=
      "<p class=\"muted\">" + Escape(what) +
      ". <span class=\"js-only\">Click a frame to zoom into it, the root to zoom out.</span></p>\n";
  out +=
      "<div class=\"controls js-only\"><button type=\"button\" id=\"flame-chart-reset\">reset "
      "zoom</button>"
      "<span id=\"flame-chart-zoom\" class=\"muted\"></span></div>\n";
  out += fmt::format(
      "<svg class=\"chart flame\" id=\"flame-chart\" data-width=\"{0}\" role=\"img\" "
      "aria-label=\"flame graph\" "
      "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\">\n",
      Num(width), Num(height));
  out += frames + "</svg>\n";
  return out + "</section>\n";
}

int RepresentativeRun(const profile::Profile& p) {
  std::map<int, int> runs;  // run -> events
  for (const auto& e : p.op_events) runs[e.run]++;
  if (runs.empty()) return -1;
  const auto& r = p.e2e.runs_ms;
  if (r.empty()) return runs.begin()->first;
  std::vector<double> s = r;
  std::sort(s.begin(), s.end());
  const double med = PercentileSorted(s, 0.5);
  int best = runs.begin()->first;
  double best_d = std::numeric_limits<double>::max();
  for (const auto& [run, n] : runs) {
    if (run < 0 || static_cast<size_t>(run) >= r.size()) continue;
    double d = std::fabs(r[run] - med);
    if (d < best_d) {
      best_d = d;
      best = run;
    }
  }
  return best;
}

std::string TimelineSection(const profile::Profile& p) {
  std::string out = "<section id=\"timeline\" class=\"deferred\">\n<h2>Timeline</h2>\n";
  struct Ev {
    int64_t start, end;
    std::string label, title, fill, href;
  };
  std::map<std::string, std::vector<Ev>> lanes;
  std::vector<std::string> lane_order;
  auto lane = [&](const std::string& name) -> std::vector<Ev>& {
    if (!lanes.count(name)) lane_order.push_back(name);
    return lanes[name];
  };
  const int run = RepresentativeRun(p);
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  std::string caption;
  if (run >= 0) {
    for (const auto& e : p.op_events) {
      if (e.run != run) continue;
      t0 = std::min(t0, e.start_ns);
      t1 = std::max(t1, e.start_ns + e.dur_ns);
    }
    caption =
        fmt::format("Measured run {} of {}", run + 1,
                    p.e2e.runs_ms.empty() ? p.meta.runs : static_cast<int>(p.e2e.runs_ms.size()));
    if (static_cast<size_t>(run) < p.e2e.runs_ms.size())
      caption += fmt::format(" ({} end to end, the run closest to the median)",
                             HumanMs(p.e2e.runs_ms[run]));
    for (const auto& e : p.op_events) {
      if (e.run != run || e.op < 0 || static_cast<size_t>(e.op) >= p.ops.size()) continue;
      const auto& op = p.ops[e.op];
      lane(fmt::format("ops · thread {}", e.tid))
          .push_back({e.start_ns, e.start_ns + e.dur_ns, op.name,
                      fmt::format("{} ({})\n{} at +{}", op.name, op.op_type,
                                  HumanMs(e.dur_ns / 1e6), HumanMs((e.start_ns - t0) / 1e6)),
                      FlameColour(op.op_type), fmt::format("#op-{}", e.op)});
    }
  } else {
    for (const auto& r : p.ranges) {
      t0 = std::min(t0, r.start_ns);
      t1 = std::max(t1, r.end_ns);
    }
    if (p.gpu) {
      for (const auto& k : p.gpu->kernels)
        t0 = std::min(t0, k.start_ns), t1 = std::max(t1, k.end_ns);
      for (const auto& m : p.gpu->memcpys)
        t0 = std::min(t0, m.start_ns), t1 = std::max(t1, m.end_ns);
    }
    caption = "The whole recording (this profile has no per-run op events)";
  }
  if (t1 <= t0) {
    out +=
        "<p class=\"muted\">No timeline: this profile has no op events, ranges or GPU activity "
        "with timestamps.</p>\n";
    return out + "</section>\n";
  }
  auto overlaps = [&](int64_t a, int64_t b) { return b >= t0 && a <= t1; };
  for (const auto& r : p.ranges)
    if (overlaps(r.start_ns, r.end_ns))
      lane(fmt::format("ranges · thread {} · depth {}", r.tid, r.depth))
          .push_back(
              {r.start_ns, r.end_ns, r.name,
               fmt::format("{} [{}]\n{}", r.name, r.domain, HumanMs((r.end_ns - r.start_ns) / 1e6)),
               "#9db8d9", ""});
  if (p.gpu) {
    for (const auto& k : p.gpu->kernels)
      if (overlaps(k.start_ns, k.end_ns))
        lane(fmt::format("GPU kernels · stream {}", k.stream))
            .push_back({k.start_ns, k.end_ns, k.name,
                        fmt::format("{}\n{}", k.name, HumanMs((k.end_ns - k.start_ns) / 1e6)),
                        "#7fbf7f", ""});
    for (const auto& m : p.gpu->memcpys)
      if (overlaps(m.start_ns, m.end_ns))
        lane(fmt::format("GPU copies · stream {}", m.stream))
            .push_back(
                {m.start_ns, m.end_ns, "memcpy " + m.kind,
                 fmt::format("memcpy {} {}{}\n{}", m.kind, HumanBytes(static_cast<double>(m.bytes)),
                             m.pageable ? " (pageable)" : "",
                             HumanMs((m.end_ns - m.start_ns) / 1e6)),
                 "#e0a060", ""});
  }
  // At most kMaxEvents rectangles: the longest are kept.
  constexpr size_t kMaxEvents = 20000;
  size_t total = 0;
  for (const auto& [k, v] : lanes) total += v.size();
  size_t dropped = 0;
  if (total > kMaxEvents) {
    std::vector<int64_t> durs;
    for (const auto& [k, v] : lanes)
      for (const auto& e : v) durs.push_back(e.end - e.start);
    std::nth_element(durs.begin(), durs.begin() + (durs.size() - kMaxEvents), durs.end());
    int64_t cut = durs[durs.size() - kMaxEvents];
    for (auto& [k, v] : lanes) {
      size_t before = v.size();
      v.erase(
          std::remove_if(v.begin(), v.end(), [&](const Ev& e) { return e.end - e.start < cut; }),
          v.end());
      dropped += before - v.size();
    }
  }
  const double label_w = 190, W = 1200, lane_h = 18, top = 18;
  const double span = static_cast<double>(t1 - t0);
  auto X = [&](int64_t t) { return label_w + (t - t0) / span * (W - label_w - 8); };
  const double H = top + lane_h * lane_order.size() + 4;
  out += "<p class=\"muted\">" + Escape(caption) + "; " + Escape(HumanMs(span / 1e6)) +
         " shown. Hover an event for details; an op links to its row.</p>\n";
  out += fmt::format(
      "<div class=\"tablewrap\"><svg class=\"chart timeline\" id=\"timeline-chart\" role=\"img\" "
      "aria-label=\"timeline\" "
      "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\">\n",
      Num(W), Num(H));
  for (int i = 0; i <= 10; ++i) {
    double x = label_w + i * (W - label_w - 8) / 10;
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/><text x=\"{0}\" "
        "y=\"12\" "
        "text-anchor=\"middle\">{3}</text>\n",
        Num(x, 1), Num(top - 2), Num(H), Escape(HumanMs(span / 1e6 * i / 10)));
  }
  for (size_t li = 0; li < lane_order.size(); ++li) {
    const double y = top + li * lane_h;
    out +=
        fmt::format("<text x=\"4\" y=\"{}\">{}</text>\n", Num(y + 12.5, 1), Escape(lane_order[li]));
    for (const auto& e : lanes[lane_order[li]]) {
      double x = X(e.start), w = std::max(0.6, X(e.end) - x);
      std::string r = fmt::format(
          "<rect class=\"ev\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\"><title>{}</title></rect>",
          Num(x, 2), Num(y + 1), Num(w, 2), Num(lane_h - 3), e.fill, Escape(e.title));
      if (!e.href.empty()) r = "<a href=\"" + Escape(e.href) + "\">" + r + "</a>";
      out += r + "\n";
    }
  }
  out += "</svg></div>\n";
  if (dropped)
    out += fmt::format(
        "<p class=\"muted\">{} of the shortest events are not drawn (at most {} are).</p>\n",
        dropped, kMaxEvents);
  return out + "</section>\n";
}

}  // namespace opscope::report::html
