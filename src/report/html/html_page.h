// Building blocks of opscope's HTML pages (the profile report and the diff page): escaping, the
// page frame, and the small server-rendered SVG charts.
//
// The page is one self-contained file: the style sheet and the script (page.css, page.js in this
// folder, embedded at build time) are inline, and a Content-Security-Policy meta tag allows no
// network at all and only that one script, by its SHA-256 hash. Every string that comes from a
// profile (node names, op types, paths, finding text: attacker-controlled) goes through Escape()
// before it reaches the page, so a name cannot open a tag; and even if one did, the policy would
// refuse to run any script but ours.
//
// Charts are SVG rendered here, not by the script, so they draw with JavaScript disabled; the
// script only adds sorting, filtering, expanding and zooming. Hover details are SVG <title>
// elements (native tooltips in every browser).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opscope::report::html {

// Text and attribute escaping: & < > " ' become entities; C0 control characters (other than tab
// and newline) and DEL are shown as visible "\xNN" text, since HTML forbids them.
std::string Escape(std::string_view s);

// A number for an attribute or a sort key: fixed, at most `decimals` decimals, "0" for non-finite.
std::string Num(double v, int decimals = 6);

// Table cells of the page's sortable tables: `html` as it is (already escaped, with a class when
// given), and a number cell whose `sort` value the script sorts by and whose `text` is shown.
std::string Td(const std::string& html, const char* cls = nullptr);
std::string TdNum(double sort, const std::string& text);

// "<!DOCTYPE html>..." up to and including <body>, with the policy, the style sheet and `title`.
std::string PageBegin(const std::string& title);
// The script and the closing tags.
std::string PageEnd();

// The script and the style sheet as embedded (for tests), and the policy's script hash
// ("sha256-<base64>").
const std::string& PageScript();
const std::string& PageStyle();
std::string ScriptHash();

// One bar of a horizontal bar chart. `value` decides the length (negative bars grow left of the
// axis, coloured as improvements); `title` is the hover text; `href` makes the bar a link.
struct Bar {
  std::string label;
  double value = 0;
  std::string value_text;
  std::string title;
  std::string href;
};
// A horizontal bar chart with one row per bar (at most `max_bars`, the rest summed into one
// "other" row when `other_label` is given).
std::string BarChart(const std::string& id, const std::string& aria_label, std::vector<Bar> bars,
                     size_t max_bars = 20, const std::string& other_label = "");

// The sparkline's geometry: kSparkWidth x kSparkHeight px, the y of each value (run order, x
// evenly spaced from 1 to width - 1) and of the median, rounded to 0.1 px. page.js draws the rows
// it builds from the embedded JSON with the same numbers (SparkFromData), so a lazily built row
// looks exactly like a server-rendered one. Empty `ys` for fewer than two values.
inline constexpr double kSparkWidth = 72, kSparkHeight = 16;
struct SparkGeometry {
  double median_y = 0;
  std::vector<double> ys;
};
SparkGeometry SparkPoints(const std::vector<double>& values);
// The <svg class="spark"> of a geometry (empty when it has no points).
std::string SparklineSvg(const SparkGeometry& g, const std::string& title);

// `s` as a JSON string literal that is safe inside a <script type="application/json"> element:
// < > & are written as \u003c \u003e \u0026, so no "</script" or "<!--" can appear; other
// control characters than tab and newline become the visible text "\xNN", as Escape() shows them.
std::string JsonString(std::string_view s);

// A histogram of per-run latencies (ms) with the median marked.
std::string LatencyHistogram(const std::string& id, const std::vector<double>& runs_ms);

// "1.234 ms", "56.7 us" (base/strings HumanMs), escaped.
std::string Ms(double ms);

}  // namespace opscope::report::html
