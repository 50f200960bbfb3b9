// The HTML report without a browser: escaping of every profile string (node names are
// attacker-controlled), one table row per op, sections present or omitted by what the profile
// holds, stage names, the representative run, and the diff page's order. tests/html_browser_test.py
// loads the pages in Chromium.
#include "report/html/html_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "analysis/diff.h"
#include "analysis/machine.h"
#include "base/strings.h"
#include "base/testing/golden.h"
#include "report/format.h"
#include "report/html/charts.h"
#include "report/html/html_page.h"

namespace opscope::report::html {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
  return n;
}

profile::OpRecord Op(const std::string& name, const std::string& type, std::vector<double> runs,
                     double flops = 0, double bytes = 0) {
  profile::OpRecord op;
  op.name = name;
  op.op_type = type;
  op.runs_ms = std::move(runs);
  op.flops = flops;
  op.bytes = bytes;
  op.output_shapes = {{1, 8, 4, 4}};
  return op;
}

profile::Profile ModelProfile() {
  profile::Profile p;
  p.meta.kind = "profile";
  p.meta.source = "models/m.onnx";
  p.meta.tool_version = "0.1.0";
  p.meta.build_type = "Release";
  p.meta.host = "h";
  p.meta.threads = 2;
  p.meta.runs = 3;
  p.e2e.runs_ms = {10, 11, 10.5};
  p.ops.push_back(Op("backbone/conv1/Conv", "Conv", {4, 4.4, 4.2}, 4e8, 4e6));
  p.ops.push_back(Op("backbone/conv1/Relu", "Relu", {0.5, 0.55, 0.52}, 1e4, 6e4));
  p.ops.push_back(Op("head.transpose", "Transpose", {3.5, 3.6, 3.55}, 0, 6e4));
  p.ops.push_back(Op("shape_of", "Shape", {0, 0, 0}));
  for (int i : {0, 1}) {
    p.ops[i].status = profile::OpStatus::kFused;
    p.ops[i].step = "backbone/conv1/Conv";
    p.ops[i].attribution = "split by estimated cost";
  }
  p.ops[3].status = profile::OpStatus::kFolded;
  for (size_t i = 0; i < p.ops.size(); ++i) p.ops[i].index = static_cast<int>(i);
  for (int run = 0; run < 3; ++run) {
    int64_t t = 1000000 * run * 20;
    for (int op = 0; op < 3; ++op) {
      p.op_events.push_back({op, run, 100 + op % 2, t, 400000});
      t += 500000;
    }
  }
  profile::Finding f;
  f.rule = "data-movement-share";
  f.severity = profile::Severity::kCritical;
  f.title = "data movement";
  f.evidence = "head.transpose moves data";
  f.ops = {"head.transpose", "not-an-op"};
  p.findings.push_back(f);
  profile::FinalizeStats(p);
  return p;
}

TEST(HtmlEscape, EveryMarkupCharacterAndControlCharacter) {
  EXPECT_EQ(Escape("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  EXPECT_EQ(Escape(std::string("a\x01"
                               "b\x7f"
                               "c\td\n",
                               8)),
            "a\\x01b\\x7fc\td\n");
  EXPECT_EQ(Escape("backbone.conv1 ✓"), "backbone.conv1 ✓");
}

// Names that are not UTF-8 (an ONNX model's node names are bytes): the page, its embedded JSON
// data included, is valid UTF-8 with U+FFFD where they were.
TEST(HtmlReport, NamesThatAreNotUtf8BecomeReplacementCharacters) {
  profile::Profile p = ModelProfile();
  p.ops[2].name = "conv\xff\xfe";
  p.ops[1].op_type = "Relu\xc3";
  p.meta.source = "m\xed\xa0\x80.onnx";
  const std::string html = RenderProfilePage(p);
  EXPECT_TRUE(IsValidUtf8(html));
  EXPECT_NE(html.find("conv\xef\xbf\xbd\xef\xbf\xbd"), std::string::npos);
}

TEST(HtmlReport, HostileNamesCannotInjectMarkup) {
  profile::Profile p = ModelProfile();
  const std::string evil = "\"><script>alert(1)</script><img src=x onerror=alert(2)>";
  p.meta.source = "</title><script>alert(3)</script>";
  p.meta.host = evil;
  p.ops[2].name = evil;
  p.ops[2].op_type = "</style><script>alert(4)</script>";
  p.ops[0].step = evil + "/step";
  p.ops[1].step = evil + "/step";
  p.findings[0].title = "<iframe src=javascript:alert(5)>";
  p.findings[0].ops = {evil};
  p.meta.degradations.push_back("<svg onload=alert(6)>");
  p.op_events[0].op = 2;
  std::string html = RenderProfilePage(p);
  EXPECT_EQ(Count(html, "<script"), 1u) << "only opscope's own script";
  EXPECT_EQ(Count(html, "</script>"), 1u);
  EXPECT_EQ(Count(html, "<img"), 0u);
  EXPECT_EQ(Count(html, "<iframe"), 0u);
  EXPECT_EQ(Count(html, "<svg onload"), 0u);
  EXPECT_EQ(Count(html, "</style>"), 1u);
  EXPECT_NE(html.find("<title>opscope: &lt;/title&gt;&lt;script&gt;alert(3)"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  // Every attribute value is double-quoted and cannot be closed by a name.
  EXPECT_EQ(html.find("data-name=\"\">"), std::string::npos);
  // The diff page escapes the same way.
  profile::Profile q = p;
  q.ops[2].runs_ms = {7, 7.1, 7.2};
  profile::FinalizeStats(q);
  std::string diff = RenderDiffPage(p, q, analysis::DiffProfiles(p, q), "<b>a.json",
                                    "b.json\"><script>x()</script>");
  EXPECT_EQ(Count(diff, "<script"), 1u);
  EXPECT_EQ(Count(diff, "<img"), 0u);
  EXPECT_EQ(Count(diff, "<b>a.json"), 0u);
}

TEST(HtmlReport, PolicyAllowsOnlyTheEmbeddedScript) {
  std::string html = RenderProfilePage(ModelProfile());
  const std::string hash = ScriptHash();
  EXPECT_TRUE(std::regex_match(hash, std::regex("sha256-[A-Za-z0-9+/]{43}=")));
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(html.find("script-src '" + hash + "'"), std::string::npos);
  EXPECT_NE(html.find("<script>" + PageScript() + "</script>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"))
      << "no link out but the SVG namespace";
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(HtmlReport, TableHoldsEveryOpAndFusedStepsGroupTheirNodes) {
  profile::Profile p = ModelProfile();
  std::string html = RenderProfilePage(p);
  EXPECT_EQ(Count(html, " data-op=\""), p.ops.size());
  for (size_t i = 0; i < p.ops.size(); ++i)
    EXPECT_NE(html.find("id=\"op-" + std::to_string(i) + "\""), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"group\""), 1u);
  EXPECT_EQ(Count(html, "class=\"child\" data-parent=\"g1\""), 2u);
  EXPECT_NE(html.find("data-rows=\"5\""), std::string::npos) << "4 ops + 1 step row";
  // Finding links point into the table; an unknown op stays text.
  EXPECT_NE(html.find("<a href=\"#op-2\"><code>head.transpose</code></a>"), std::string::npos);
  EXPECT_NE(html.find("<code>not-an-op</code>"), std::string::npos);
  // Findings come before the table.
  EXPECT_LT(html.find("id=\"findings\""), html.find("id=\"optable\""));
  // Sparklines per row, the charts, the timeline of one run.
  EXPECT_GE(Count(html, "class=\"spark\""), 3u);
  for (const char* id : {"optype-chart", "stage-chart", "roofline-chart", "flame-chart",
                         "timeline-chart", "latency-chart"})
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("No machine ceilings"), std::string::npos);
}

TEST(HtmlReport, SectionsFollowWhatTheProfileHolds) {
  profile::Profile p;
  p.meta.kind = "stat";
  p.meta.source = "./app";
  p.stat.emplace();
  p.stat->command = {"./app", "--x"};
  profile::StatRun run;
  run.counters.push_back({"task-clock", "ms", 12, 12e6, 1, 1, true, "", "", 1});
  p.stat->runs.push_back(run);
  p.stat->summary["task-clock"] = ComputeStats(std::vector<double>{12, 13});
  std::string html = RenderProfilePage(p);
  EXPECT_NE(html.find("id=\"countertable\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"optable\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"roofline\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("has no per-op data"), std::string::npos);
}

TEST(HtmlReport, RooflineUsesTheProfilesCeilings) {
  profile::Profile p = ModelProfile();
  analysis::MachineCeilings c;
  c.peak_gflops_all = 200;
  c.peak_gflops_one = 100;
  c.triad_gbps = 20;
  c.llc_gbps = 80;
  c.threads = 2;
  c.method = "manual";
  p.meta.machine = c;
  std::string html = RenderProfilePage(p);
  EXPECT_NE(html.find("class=\"roof\""), std::string::npos);
  EXPECT_NE(html.find("compute-bound"), std::string::npos);
  EXPECT_EQ(html.find("No machine ceilings"), std::string::npos);
  EXPECT_NE(html.find("<th>bound</th>"), std::string::npos);
}

TEST(HtmlReport, StagesAndScopes) {
  EXPECT_EQ(StageOf("backbone/conv1/Conv"), "backbone");
  EXPECT_EQ(StageOf("/view_transform/lift/Mul"), "view_transform");
  EXPECT_EQ(StageOf("backbone.conv1.bn"), "backbone");
  EXPECT_EQ(StageOf("Conv_12"), "");
  EXPECT_EQ(ScopeParts("a/b.c/d"), (std::vector<std::string>{"a", "b.c", "d"}));
  EXPECT_EQ(ScopeParts("").size(), 1u);
}

TEST(HtmlReport, FlameFromOpScopesWithoutSamples) {
  profile::Profile p = ModelProfile();
  std::string what, unit;
  FlameNode root = BuildFlameTree(p, &what, &unit);
  EXPECT_EQ(unit, "ms");
  ASSERT_EQ(root.children.size(), 2u);  // backbone, head (the folded op has no time)
  EXPECT_EQ(root.children[0].name, "backbone");
  EXPECT_NEAR(root.children[0].value, p.ops[0].stats.trimmed_mean + p.ops[1].stats.trimmed_mean,
              1e-9);
  EXPECT_NEAR(root.value, root.children[0].value + root.children[1].value, 1e-9);
}

TEST(HtmlReport, FlameFromSamplesRootFirst) {
  profile::Profile p = ModelProfile();
  p.samples.emplace();
  p.samples->unit = "ns";
  p.samples->frames.resize(2);
  p.samples->frames[0].function = "leaf";
  p.samples->frames[0].module = "a.so";
  p.samples->frames[1].function = "main";
  p.samples->frames[1].module = "app";
  p.samples->samples.push_back({{0, 1}, 1, 1, 0, 1e6, -1});
  p.samples->samples.push_back({{1}, 1, 1, 0, 1e6, -1});
  std::string what, unit;
  FlameNode root = BuildFlameTree(p, &what, &unit);
  ASSERT_EQ(root.children.size(), 1u);
  EXPECT_EQ(root.children[0].name, "main [app]");
  EXPECT_DOUBLE_EQ(root.children[0].value, 2e6);
  ASSERT_EQ(root.children[0].children.size(), 1u);
  EXPECT_EQ(root.children[0].children[0].name, "leaf [a.so]");
  std::string html = RenderProfilePage(p);
  EXPECT_NE(html.find("id=\"functable\""), std::string::npos);
}

TEST(HtmlReport, RepresentativeRunIsClosestToTheMedian) {
  profile::Profile p = ModelProfile();
  EXPECT_EQ(RepresentativeRun(p), 2);  // 10.5 ms is the median of {10, 11, 10.5}
  p.op_events.clear();
  EXPECT_EQ(RepresentativeRun(p), -1);
}

TEST(HtmlReport, DiffPutsRegressionsFirst) {
  profile::Profile a = ModelProfile(), b = ModelProfile();
  b.ops[2].runs_ms = {5.5, 5.6, 5.55};  // Transpose much slower
  b.ops[0].runs_ms = {3, 3.1, 3.05};    // Conv faster
  b.e2e.runs_ms = {12, 12.5, 12.2};
  profile::FinalizeStats(b);
  std::string html = RenderDiffPage(a, b, analysis::DiffProfiles(a, b), "a.json", "b.json");
  EXPECT_EQ(Count(html, " data-op=\""), a.ops.size());
  const size_t slow = html.find("<td class=\"name\">head.transpose</td>");
  const size_t fast = html.find("<td class=\"name\">backbone/conv1/Conv</td>");
  ASSERT_NE(slow, std::string::npos);
  ASSERT_NE(fast, std::string::npos);
  EXPECT_LT(slow, fast);
  EXPECT_NE(html.find(">slower</td>"), std::string::npos);
  EXPECT_NE(html.find(">faster</td>"), std::string::npos);
  EXPECT_NE(html.find("id=\"optype-delta-chart\""), std::string::npos);
}

// The JSON block of a page whose op table holds only its first rows, parsed.
nlohmann::json RowData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"optable-data\">";
  size_t a = html.find(open);
  if (a == std::string::npos) return nullptr;
  a += open.size();
  return nlohmann::json::parse(html.substr(a, html.find("</script>", a) - a));
}

TEST(HtmlReport, FiveThousandOpsGetTheFirstRowsAsHtmlAndTheRestAsData) {
  profile::Profile p = ModelProfile();
  p.ops.clear();
  p.op_events.clear();
  for (int i = 0; i < 5000; ++i) {
    // Times fall with the index, so the default order (by share) is the index order.
    p.ops.push_back(Op("/encoder/layer." + std::to_string(i / 40) + "/MatMul_" + std::to_string(i),
                       "MatMul", {1 - i * 1e-4, 1.1 - i * 1e-4, 1 - i * 1e-4}, 1e7, 1e6));
    p.ops.back().index = i;
    for (int run = 0; run < 3; ++run)
      p.op_events.push_back({i, run, 1, run * 1000000000LL + i * 100000LL, 90000});
  }
  p.findings[0].ops = {"/encoder/layer.124/MatMul_4999"};
  profile::FinalizeStats(p);
  std::string html = RenderProfilePage(p);
  const size_t data_at = html.find("id=\"optable-data\"");
  ASSERT_NE(data_at, std::string::npos);
  const std::string head = html.substr(0, data_at);
  EXPECT_EQ(Count(head, " data-op=\""), 200u) << "the first 200 rows as HTML";
  EXPECT_EQ(Count(head, "class=\"spark\""), 200u);
  EXPECT_NE(head.find("id=\"op-199\""), std::string::npos);
  EXPECT_EQ(head.find("id=\"op-200\""), std::string::npos);
  EXPECT_NE(html.find("data-rows=\"5000\""), std::string::npos);
  nlohmann::json d = RowData(html);
  ASSERT_TRUE(d.is_object());
  ASSERT_EQ(d["units"].size(), 4800u);
  for (size_t u = 0; u < d["units"].size(); ++u) {
    ASSERT_EQ(d["units"][u].size(), 1u);
    EXPECT_EQ(d["units"][u][0]["id"], "op-" + std::to_string(200 + u));
  }
  // One row exactly as page.js reads it (RowJson): cells in column order.
  EXPECT_EQ(d["units"][4799][0].dump(),
            R"({"c":[[4999,"4999"],{"name":"/encoder/layer.124/MatMul_4999"},"MatMul","executed",)"
            R"([0.5001,"500.1 us"],[0.533433,"533.4 us"],[0.000136,"0.0%"],)"
            R"({"m":14.5,"s":1,"v":0.108233,"x":"3 runs: CV 10.8%","y":[14.5,1.5,14.5]},)"
            R"([0.108233,"10.8%"],)"
            R"([10000000,"10.00M"],[1000000,"1.00 MB"],[18.746485,"18.75"],[1.874649,"1.87"],)"
            R"([10,"10.00"],{"c":"mono","x":"1x8x4x4"}],"id":"op-4999",)"
            R"("n":"/encoder/layer.124/MatMul_4999","op":4999,"t":"MatMul"})");
  EXPECT_EQ(d["spark"], nlohmann::json::parse("[72,16]"));
  // The finding's link targets the row that only the script builds.
  EXPECT_NE(html.find("<a href=\"#op-4999\">"), std::string::npos);
  // Without the script: a note says what is missing and how to get the whole table.
  EXPECT_NE(html.find("<noscript><p class=\"note\" id=\"optable-noscript\">Only the first 200 of "
                      "the 5000 rows"),
            std::string::npos);
  EXPECT_NE(html.find("--format csv"), std::string::npos);
  EXPECT_NE(html.find("class=\"sortable fixed\""), std::string::npos);
  EXPECT_NE(html.find("<colgroup>"), std::string::npos);
  EXPECT_EQ(Count(html, "<rect class=\"ev\""), 5000u) << "one run on the timeline";
  EXPECT_NE(html.find("class=\"deferred\""), std::string::npos);
}

TEST(HtmlReport, LargeDiffCarriesItsLaterNodesAsData) {
  profile::Profile a = ModelProfile();
  a.ops.clear();
  a.op_events.clear();
  for (int i = 0; i < 450; ++i) {
    a.ops.push_back(Op("n" + std::to_string(i), "Relu", {1, 1.1, 1.05}));
    a.ops.back().index = i;
  }
  profile::Profile b = a;
  for (auto& op : b.ops) op.runs_ms = {1.2, 1.3, 1.25};
  profile::FinalizeStats(a);
  profile::FinalizeStats(b);
  std::string html = RenderDiffPage(a, b, analysis::DiffProfiles(a, b), "a.json", "b.json");
  const size_t data_at = html.find("<script type=\"application/json\" id=\"difftable-data\">");
  ASSERT_NE(data_at, std::string::npos);
  EXPECT_EQ(Count(html.substr(0, data_at), " data-op=\""), 200u);
  EXPECT_EQ(Count(html, "\"id\":\"node-"), 250u);
  EXPECT_NE(html.find("Only the first 200 of the 450 rows"), std::string::npos);
  EXPECT_NE(html.find("--format json</code>"), std::string::npos);
}

TEST(HtmlReport, RowsCarriedAsDataCannotCloseTheirScript) {
  profile::Profile p = ModelProfile();
  p.ops.clear();
  p.op_events.clear();
  for (int i = 0; i < 300; ++i) {
    p.ops.push_back(Op("n" + std::to_string(i), "Relu", {1.0 / (i + 1), 1.0 / (i + 1)}));
    p.ops.back().index = i;
  }
  const std::string evil = std::string("</script><script>alert(1)</script><!--\x01\"\\");
  p.ops[299].name = evil;
  p.ops[299].op_type = "</SCRIPT>&";
  p.findings.clear();
  profile::FinalizeStats(p);
  std::string html = RenderProfilePage(p);
  EXPECT_EQ(Count(html, "<script"), 2u) << "opscope's script and the row data";
  EXPECT_EQ(Count(html, "</script>"), 2u);
  EXPECT_EQ(Count(html, "<!--"), 0u);
  nlohmann::json d = RowData(html);
  ASSERT_TRUE(d.is_object());
  const auto& row = d["units"].back()[0];
  // The control character is shown as the HTML rows show it (Escape: "\x01").
  EXPECT_EQ(row["n"], "</script><script>alert(1)</script><!--\\x01\"\\");
  EXPECT_EQ(row["t"], "</SCRIPT>&");
}

TEST(HtmlPage, JsonStringIsSafeInsideAScriptElement) {
  EXPECT_EQ(JsonString("a</script>&\"\\\n\t\x01"),
            "\"a\\u003c/script\\u003e\\u0026\\\"\\\\\\n\\t\\\\x01\"");
  EXPECT_EQ(JsonString("✓"), "\"✓\"");
}

TEST(HtmlReport, GpuProfileGetsKernelAndCopyTablesAndLanes) {
  profile::Profile p;
  p.meta.kind = "gpu";
  p.meta.source = "./infer";
  p.gpu.emplace();
  p.gpu->device_name = "Test GPU";
  profile::GpuKernel k;
  k.name = "gemm<float>";
  k.stream = 7;
  k.start_ns = 1000;
  k.end_ns = 51000;
  p.gpu->kernels = {k, k};
  p.gpu->kernels[1].start_ns = 60000;
  p.gpu->kernels[1].end_ns = 90000;
  profile::GpuMemcpy m;
  m.kind = "HtoD";
  m.bytes = 1 << 20;
  m.pageable = true;
  m.stream = 7;
  m.start_ns = 0;
  m.end_ns = 900;
  p.gpu->memcpys = {m};
  profile::Range r;
  r.name = "infer";
  r.start_ns = 0;
  r.end_ns = 95000;
  p.ranges = {r};
  std::string html = RenderProfilePage(p);
  EXPECT_NE(html.find("id=\"kerneltable\""), std::string::npos);
  EXPECT_NE(html.find("id=\"copytable\""), std::string::npos);
  EXPECT_NE(html.find("HtoD (pageable)"), std::string::npos);
  EXPECT_NE(html.find("GPU kernels · stream 7"), std::string::npos);
  EXPECT_NE(html.find("GPU copies · stream 7"), std::string::npos);
  EXPECT_NE(html.find("ranges · thread 0 · depth 0"), std::string::npos);
  EXPECT_NE(html.find("The whole recording"), std::string::npos);
  EXPECT_EQ(Count(html, "<rect class=\"ev\""), 4u);
}

TEST(HtmlReport, RegisteredByExtension) {
  const Format* f = FormatForPath("out/report.html");
  ASSERT_NE(f, nullptr);
  EXPECT_STREQ(f->name, "html");
  std::string out;
  ASSERT_TRUE(f->write(ModelProfile(), {}, &out).ok());
  EXPECT_EQ(out.rfind("<!DOCTYPE html>", 0), 0u);
}

// The page without the embedded style sheet and script (tested by hash above), so the golden file
// shows the structure a change to the C++ renders differently. Regenerate with
//   OPSCOPE_UPDATE_GOLDEN=1 build/release/src/report/html/html_report_test
std::string Structure(std::string html) {
  auto cut = [&](const std::string& open, const std::string& close) {
    size_t a = html.find(open), b = html.find(close, a);
    if (a != std::string::npos && b != std::string::npos)
      html.replace(a + open.size(), b - a - open.size(), "…");
  };
  cut("<style>", "</style>");
  cut("<script>", "</script>");
  cut("script-src 'sha256-", "'\">");
  return html;
}

TEST(HtmlReport, GoldenPages) {
  const std::string dir = std::string(OPSCOPE_SOURCE_DIR) + "/src/report/html/testdata/";
  profile::Profile p = ModelProfile();
  ::opscope::testing::ExpectMatchesGolden(dir + "model.profile.html",
                                          Structure(RenderProfilePage(p)));
  profile::Profile q = p;
  q.ops[2].runs_ms = {5.5, 5.6, 5.55};
  q.e2e.runs_ms = {12, 12.5, 12.2};
  profile::FinalizeStats(q);
  ::opscope::testing::ExpectMatchesGolden(
      dir + "model.diff.html",
      Structure(RenderDiffPage(p, q, analysis::DiffProfiles(p, q), "a.json", "b.json")));
}

}  // namespace
}  // namespace opscope::report::html
