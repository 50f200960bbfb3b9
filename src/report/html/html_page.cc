#include "report/html/html_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/stats.h"
#include "base/strings.h"

namespace opscope::report::html {

// Generated at configure time from page.js and page.css (CMakeLists.txt in this folder).
extern const char kPageScript[];
extern const char kPageStyle[];
extern const char kPageScriptSha256Hex[];

std::string Escape(std::string_view raw) {
  const std::string s = ToValidUtf8(raw);
  std::string out;
  out.reserve(s.size() + 8);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
          out += fmt::format("\\x{:02x}", c);
        else
          out += ch;
    }
  }
  return out;
}

std::string Td(const std::string& html, const char* cls) {
  return cls ? fmt::format("<td class=\"{}\">{}</td>", cls, html) : "<td>" + html + "</td>";
}

std::string TdNum(double sort, const std::string& text) {
  return "<td class=\"num\" data-v=\"" + Num(sort) + "\">" + Escape(text) + "</td>";
}

std::string Num(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string Ms(double ms) { return Escape(HumanMs(ms)); }

const std::string& PageScript() {
  static const std::string s = kPageScript;
  return s;
}
const std::string& PageStyle() {
  static const std::string s = kPageStyle;
  return s;
}

std::string ScriptHash() {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string hex = kPageScriptSha256Hex;
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<unsigned char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = bytes[i] << 16;
    if (i + 1 < bytes.size()) n |= bytes[i + 1] << 8;
    if (i + 2 < bytes.size()) n |= bytes[i + 2];
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kB64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kB64[n & 63] : '=';
  }
  return "sha256-" + out;
}

std::string PageBegin(const std::string& title) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\" class=\"nojs\">\n<head>\n<meta charset=\"utf-8\">\n";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; img-src data:; script-src '" +
      ScriptHash() + "'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"opscope\">\n";
  out += "<title>" + Escape(title) + "</title>\n<style>\n" + PageStyle() +
         "</style>\n</head>\n<body>\n";
  return out;
}

std::string PageEnd() { return "<script>" + PageScript() + "</script>\n</body>\n</html>\n"; }

std::string BarChart(const std::string& id, const std::string& aria_label, std::vector<Bar> bars,
                     size_t max_bars, const std::string& other_label) {
  if (bars.empty()) return "";
  if (!other_label.empty() && bars.size() > max_bars) {
    Bar other;
    other.label = other_label;
    size_t n = bars.size() - (max_bars - 1);
    for (size_t i = max_bars - 1; i < bars.size(); ++i) other.value += bars[i].value;
    other.value_text = HumanMs(other.value);
    other.title = fmt::format("{} more rows, {} in all", n, HumanMs(other.value));
    bars.resize(max_bars - 1);
    bars.push_back(other);
  } else if (bars.size() > max_bars) {
    bars.resize(max_bars);
  }
  const double label_w = 190, bar_w = 300, value_w = 130, row_h = 18;
  double max_pos = 0, max_neg = 0;
  for (const Bar& b : bars) {
    max_pos = std::max(max_pos, b.value);
    max_neg = std::max(max_neg, -b.value);
  }
  const double span = max_pos + max_neg > 0 ? max_pos + max_neg : 1;
  const double axis_x = label_w + bar_w * max_neg / span;
  const double width = label_w + bar_w + value_w, height = row_h * bars.size() + 6;
  std::string out = fmt::format(
      "<svg class=\"chart bars\" id=\"{}\" role=\"img\" aria-label=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" "
      "viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">\n",
      Escape(id), Escape(aria_label), Num(width), Num(height), Num(width), Num(height));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = 3 + row_h * i;
    const double len = bar_w * std::fabs(b.value) / span;
    const double x = b.value >= 0 ? axis_x : axis_x - len;
    std::string label = b.label.size() > 30 ? b.label.substr(0, 29) + "…" : b.label;
    std::string g = "<g>";
    g += "<title>" + Escape(b.title.empty() ? b.label + ": " + b.value_text : b.title) + "</title>";
    g += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", Num(label_w - 6),
                     Num(y + 12), Escape(label));
    const char* cls = max_neg > 0 ? (b.value >= 0 ? "bar pos" : "bar neg") : "bar";
    g += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", cls,
                     Num(x, 2), Num(y + 2), Num(std::max(len, 0.5), 2), Num(row_h - 5));
    g += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", Num(label_w + bar_w + 6), Num(y + 12),
                     Escape(b.value_text));
    g += "</g>";
    if (!b.href.empty()) g = "<a href=\"" + Escape(b.href) + "\">" + g + "</a>";
    out += g + "\n";
  }
  if (max_neg > 0)
    out += fmt::format("<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"0\" y2=\"{1}\"/>\n",
                       Num(axis_x, 2), Num(height));
  out += "</svg>\n";
  return out;
}

SparkGeometry SparkPoints(const std::vector<double>& values) {
  SparkGeometry g;
  if (values.size() < 2) return g;
  const double h = kSparkHeight;
  auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  double lo = *lo_it, hi = *hi_it;
  if (hi - lo <= 0) hi = lo + 1e-12;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const double med = PercentileSorted(sorted, 0.5);
  auto ypos = [&](double v) {
    return std::round((h - 1.5 - (v - lo) / (hi - lo) * (h - 3)) * 10) / 10;
  };
  g.median_y = ypos(med);
  g.ys.reserve(values.size());
  for (double v : values) g.ys.push_back(ypos(v));
  return g;
}

std::string SparklineSvg(const SparkGeometry& g, const std::string& title) {
  if (g.ys.empty()) return "";
  const double w = kSparkWidth, h = kSparkHeight;
  std::string pts;
  pts.reserve(g.ys.size() * 10);
  for (size_t i = 0; i < g.ys.size(); ++i) {
    if (i) pts += ' ';
    pts += Num(1 + (w - 2) * i / (g.ys.size() - 1), 1);
    pts += ',';
    pts += Num(g.ys[i], 1);
  }
  return fmt::format(
      "<svg class=\"spark\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">"
      "<title>{2}</title><line x1=\"0\" x2=\"{0}\" y1=\"{3}\" y2=\"{3}\"/><polyline "
      "points=\"{4}\"/></svg>",
      Num(w), Num(h), Escape(title), Num(g.median_y, 1), pts);
}

std::string JsonString(std::string_view raw) {
  const std::string s = ToValidUtf8(raw);  // JSON text is UTF-8: invalid bytes become U+FFFD
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '<':
      case '>':
      case '&':
        out += fmt::format("\\u{:04x}", c);
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        // Shown as the visible text "\xNN", as Escape() shows them in the HTML rows.
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\\\x{:02x}", c);
        else
          out += ch;
    }
  }
  return out + "\"";
}

std::string LatencyHistogram(const std::string& id, const std::vector<double>& runs_ms) {
  if (runs_ms.size() < 2) return "";
  std::vector<double> s = runs_ms;
  std::sort(s.begin(), s.end());
  const double lo = s.front(), hi = s.back();
  const int bins =
      std::clamp(static_cast<int>(std::sqrt(static_cast<double>(s.size()))) + 2, 5, 30);
  const double bw = hi > lo ? (hi - lo) / bins : 1;
  std::vector<int> count(bins, 0);
  for (double v : s) count[std::min(bins - 1, static_cast<int>((v - lo) / bw))]++;
  const int max_count = *std::max_element(count.begin(), count.end());
  const double w = 300, h = 90, pad_b = 18, pad_l = 4;
  std::string out = fmt::format(
      "<svg class=\"chart hist\" id=\"{}\" role=\"img\" aria-label=\"end-to-end latency "
      "histogram\" "
      "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">\n",
      Escape(id), Num(w), Num(h), Num(w), Num(h));
  const double cw = (w - 2 * pad_l) / bins;
  for (int i = 0; i < bins; ++i) {
    double bh = max_count ? (h - pad_b - 4) * count[i] / max_count : 0;
    out += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{} … {}: {} "
        "run(s)</title></rect>\n",
        Num(pad_l + i * cw + 0.5, 2), Num(h - pad_b - bh, 2), Num(std::max(cw - 1, 0.5), 2),
        Num(std::max(bh, 0.0), 2), Escape(HumanMs(lo + i * bw)), Escape(HumanMs(lo + (i + 1) * bw)),
        count[i]);
  }
  const double med = PercentileSorted(s, 0.5);
  const double mx = pad_l + (hi > lo ? (med - lo) / (hi - lo) : 0.5) * (w - 2 * pad_l);
  out += fmt::format(
      "<line class=\"roof\" x1=\"{0}\" x2=\"{0}\" y1=\"2\" y2=\"{1}\"><title>median "
      "{2}</title></line>\n",
      Num(mx, 2), Num(h - pad_b), Escape(HumanMs(med)));
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
      Num(pad_l), Num(h - 4), Escape(HumanMs(lo)), Num(w - pad_l), Num(h - 4), Escape(HumanMs(hi)));
  out += "</svg>\n";
  return out;
}

}  // namespace opscope::report::html
