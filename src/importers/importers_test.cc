// Importers: golden dumps per format and layout variant, sniffing, bad input, TensorRT name
// parsing, layer info, the model join, and the fuzz entry over every fixture (truncations and
// bit flips) plus the replayed corpora.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/rules.h"
#include "base/files.h"
#include "base/strings.h"
#include "base/testing/fuzz_corpus.h"
#include "base/testing/golden.h"
#include "importers/devices.h"
#include "importers/importer.h"
#include "importers/model_join.h"
#include "importers/tensorrt/layer_info.h"
#include "importers/tensorrt/layer_names.h"
#include "profile/profile_io.h"
#include "report/format.h"
#include "report/trace_check.h"
#include "sections/memory/memory_section.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::importers {
int FuzzImport(const char* format, const uint8_t* data, size_t size);
}

namespace opscope::importers {
namespace {

std::string Data(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/importers/testdata/" + name;
}
std::string Model() { return std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx"; }

StatusOr<profile::Profile> FromText(std::string_view text, const char* format = nullptr) {
  auto src = Source::FromBytes(text, "t.json");
  return Import(*src, format ? FindFormat(format) : nullptr);
}

std::string Shapes(const std::vector<std::vector<int64_t>>& v) {
  std::vector<std::string> s;
  for (const auto& x : v) s.push_back(ShapeToString(x));
  return Join(s, ",");
}

// A stable text form of what an importer produced (times rounded to 0.1 µs).
std::string Dump(const profile::Profile& p) {
  std::string out = "kind " + p.meta.kind + "\nruns " + std::to_string(p.meta.runs) + "\n";
  out += "e2e";
  for (double v : p.e2e.runs_ms) out += fmt::format(" {:.4f}", v);
  out += "\n";
  if (const auto& i = p.meta.import) {  // the files and the model's path vary: not shown
    out += "meta import.format = " + i->format + "\n";
    if (!i->model.empty()) {
      out += fmt::format("meta import.matched_rows = {} of {}\n", i->matched_rows, i->rows);
      out += fmt::format("meta import.matched_share = {:.1f}%\n", i->matched_share * 100);
      out += fmt::format("meta import.model_nodes_timed = {} of {}\n", i->model_nodes_timed,
                         i->model_nodes);
      if (!i->unmatched.empty())
        out += "meta import.unmatched = " + Join(i->unmatched, ", ") + "\n";
    }
  }
  for (const auto& [k, v] : p.meta.extra) out += "extra " + k + " = " + v + "\n";
  for (const auto& d : p.meta.degradations) out += "degradation " + d + "\n";
  for (const auto& op : p.ops) {
    out += fmt::format("op {} | {} | {} | in {} | out {} | flops {:.0f} bytes {:.0f} | runs",
                       op.name, op.op_type, profile::OpStatusName(op.status),
                       Shapes(op.input_shapes), Shapes(op.output_shapes), op.flops, op.bytes);
    for (double v : op.runs_ms) out += fmt::format(" {:.4f}", v);
    out += " | " + op.attribution;
    if (!op.fused_with.empty()) out += " | with " + Join(op.fused_with, ",");
    out += "\n";
  }
  if (p.samples) {
    out += fmt::format("samples {} frames {} event {} unit {}\n", p.samples->samples.size(),
                       p.samples->frames.size(), p.samples->event, p.samples->unit);
    for (size_t i = 0; i < p.samples->samples.size() && i < 6; ++i) {
      const auto& s = p.samples->samples[i];
      out += fmt::format("sample pid {} tid {} t {} w {} stack", s.pid, s.tid, s.time_ns, s.weight);
      for (uint32_t f : s.stack)
        out += " " + p.samples->frames[f].function + "@" + p.samples->frames[f].module;
      out += "\n";
    }
    for (const auto& [tid, name] : p.samples->thread_names)
      out += fmt::format("thread {} {}\n", tid, name);
    for (const auto& w : p.samples->warnings) out += "warning " + w + "\n";
  }
  if (p.gpu) out += fmt::format("gpu kernels {}\n", p.gpu->kernels.size());
  return out;
}

// The checkout's path is written as $SRC, so that the goldens hold in any clone.
void Golden(const std::string& fixture, const profile::Profile& p) {
  std::string text = Dump(p);
  const std::string src = OPSCOPE_SOURCE_DIR;
  for (size_t at; (at = text.find(src)) != std::string::npos;) text.replace(at, src.size(), "$SRC");
  opscope::testing::ExpectMatchesGolden(Data("golden/" + fixture + ".txt"), text);
}

// --- ONNX Runtime ---

TEST(OrtImport, CurrentLayoutWithShapesAndProviders) {
  auto p = ImportFile(Data("ort_bev_all.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "import/ort");
  EXPECT_EQ(p->meta.runs, 3);
  EXPECT_EQ(p->e2e.runs_ms.size(), 3u);
  const auto& first = p->ops[0];
  EXPECT_FALSE(first.input_shapes.empty());
  EXPECT_NE(p->meta.extra["ort.providers"].find("CPUExecutionProvider"), std::string::npos);
  Golden("ort_bev_all", *p);
}

TEST(OrtImport, BasicOptimizationKeepsOnnxNames) {
  auto p = ImportFile(Data("ort_bev_basic.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  bool found = false;
  for (const auto& op : p->ops) found = found || op.name == "backbone.conv1";
  EXPECT_TRUE(found);
  Golden("ort_bev_basic", *p);
}

TEST(OrtImport, OldLayoutOpNameOnlyAndFences) {
  auto p = ImportFile(Data("ort_2019.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 3u);
  EXPECT_EQ(p->ops[0].name, "conv1");
  EXPECT_EQ(p->ops[0].op_type, "Conv");
  ASSERT_EQ(p->ops[0].runs_ms.size(), 2u);
  EXPECT_NEAR(p->ops[0].runs_ms[0], 0.410, 1e-9);
  EXPECT_NEAR(p->ops[0].runs_ms[1], 0.380, 1e-9);
  EXPECT_NEAR(p->e2e.runs_ms[1], 0.560, 1e-9);
  EXPECT_EQ(p->meta.extra["ort.fence_events"].substr(0, 2), "2 ");
  Golden("ort_2019", *p);
}

TEST(OrtImport, WithoutModelRunCountsOccurrences) {
  auto p = FromText(
      R"([{"cat":"Node","ph":"X","ts":1,"dur":10,"name":"a_kernel_time","args":{"op_name":"Add"}},
                        {"cat":"Node","ph":"X","ts":20,"dur":12,"name":"a_kernel_time","args":{"op_name":"Add"}}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops[0].runs_ms.size(), 2u);
  EXPECT_NEAR(p->ops[0].runs_ms[1], 0.012, 1e-12);
  EXPECT_TRUE(p->e2e.runs_ms.empty());
}

// A Loop's body nodes run inside its kernel: their events lie within the Loop's on the same
// thread. The Loop row is exclusive of them (it used to hold their time too, counted twice); an
// If nested in the body is exclusive of its own branch; another thread's event that overlaps
// is not nested, nor is an ordinary event that starts where the previous one ended.
TEST(OrtImport, ControlFlowParentsAreExclusiveOfTheirBodies) {
  auto p = FromText(R"([
    {"cat":"Session","ph":"X","ts":0,"dur":1000,"name":"model_run"},
    {"cat":"Node","ph":"X","tid":1,"ts":10,"dur":100,"name":"loop_kernel_time","args":{"op_name":"Loop"}},
    {"cat":"Node","ph":"X","tid":1,"ts":20,"dur":30,"name":"body_add_kernel_time","args":{"op_name":"Add"}},
    {"cat":"Node","ph":"X","tid":1,"ts":60,"dur":40,"name":"body_if_kernel_time","args":{"op_name":"If"}},
    {"cat":"Node","ph":"X","tid":1,"ts":65,"dur":25,"name":"branch_mul_kernel_time","args":{"op_name":"Mul"}},
    {"cat":"Node","ph":"X","tid":2,"ts":30,"dur":10,"name":"other_kernel_time","args":{"op_name":"Relu"}},
    {"cat":"Node","ph":"X","tid":1,"ts":110,"dur":0,"name":"after_kernel_time","args":{"op_name":"Identity"}},
    {"cat":"Node","ph":"X","tid":1,"ts":110,"dur":20,"name":"next_kernel_time","args":{"op_name":"Conv"}}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::map<std::string, double> ms;
  for (const auto& op : p->ops) ms[op.name] = op.runs_ms.at(0);
  EXPECT_NEAR(ms["loop"], (100 - 30 - 40) / 1000.0, 1e-12);
  EXPECT_NEAR(ms["body_if"], (40 - 25) / 1000.0, 1e-12);
  EXPECT_NEAR(ms["body_add"], 0.030, 1e-12);
  EXPECT_NEAR(ms["branch_mul"], 0.025, 1e-12);
  EXPECT_NEAR(ms["other"], 0.010, 1e-12);
  EXPECT_NEAR(ms["next"], 0.020, 1e-12);
  EXPECT_EQ(p->meta.extra["ort.nested_events"].substr(0, 2), "3 ");
}

TEST(OrtImport, UnnamedNodesGetEngineStyleNames) {
  auto p = FromText(
      R"([{"cat":"Node","ph":"X","ts":1,"dur":10,"name":"_kernel_time","args":{"op_name":"Relu","node_index":"4"}}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->ops[0].name, "Relu_4");
}

TEST(OrtImport, BadInputIsOneClearError) {
  std::string text = ReadFile(Data("ort_2019.json")).value();
  auto trunc = FromText(text.substr(0, text.size() / 2), "ort");
  ASSERT_FALSE(trunc.ok());
  EXPECT_NE(trunc.status().message().find("truncated"), std::string::npos)
      << trunc.status().message();
  auto neg =
      FromText(R"([{"cat":"Node","ph":"X","ts":1,"dur":-5,"name":"a_kernel_time","args":{}}])");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos);
  auto none =
      FromText(R"([{"cat":"Session","ph":"X","ts":1,"dur":5,"name":"model_run","args":{}}])");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no node events"), std::string::npos);
}

// --- TensorRT ---

TEST(TrtImport, Trt8WithMedian) {
  auto p = ImportFile(Data("trt8_bev.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "import/tensorrt");
  EXPECT_EQ(p->meta.runs, 200);
  EXPECT_EQ(p->ops[0].op_type, "Reformat");
  EXPECT_EQ(p->meta.extra["trt.layout"], "TensorRT 8+ (medianMs)");
  Golden("trt8_bev", *p);
}

TEST(TrtImport, Trt7WithoutMedian) {
  auto p = ImportFile(Data("trt7_bev.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.extra["trt.layout"], "TensorRT 7 (no medianMs)");
  EXPECT_EQ(p->ops[0].op_type, "TensorRT");  // "backbone.conv1" says nothing about its type
  Golden("trt7_bev", *p);
}

TEST(TrtImport, RepeatedProfilesOfSeveralStreamsKeepTheFirst) {
  auto p = FromText(R"([{"count":2},{"name":"a","timeMs":1,"averageMs":0.5,"percentage":100},
                        {"count":2},{"name":"a","timeMs":1.2,"averageMs":0.6,"percentage":100}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 1u);
  EXPECT_EQ(p->meta.runs, 4);
}

TEST(TrtImport, NanNegativeAndTruncated) {
  auto nan = FromText(R"([{"count":2},{"name":"a","timeMs":1,"averageMs":NaN,"percentage":1}])",
                      "tensorrt");
  EXPECT_FALSE(nan.ok());
  auto neg = FromText(R"([{"count":2},{"name":"a","timeMs":1,"averageMs":-0.5,"percentage":1}])");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos) << neg.status().message();
  auto trunc = FromText(R"([{"count":2},{"name":"a","timeMs":1,"averageMs":0.5)", "tensorrt");
  ASSERT_FALSE(trunc.ok());
  EXPECT_NE(trunc.status().message().find("truncated"), std::string::npos);
}

TEST(TrtNames, FusedPointwiseRegionReformat) {
  using K = trt::LayerName::Kind;
  auto a = trt::ParseLayerName("Conv_12 + BatchNormalization_13 + Relu_14");
  EXPECT_EQ(a.kind, K::kFused);
  EXPECT_EQ(a.parts, (std::vector<std::string>{"Conv_12", "BatchNormalization_13", "Relu_14"}));
  auto b = trt::ParseLayerName("/m/conv/Conv + PWN(PWN(/m/act/Sigmoid), /m/act/Mul)");
  EXPECT_EQ(b.parts, (std::vector<std::string>{"/m/conv/Conv", "/m/act/Sigmoid", "/m/act/Mul"}));
  auto c = trt::ParseLayerName("{ForeignNode[/blocks.0/Add.../blocks.3/Mul]}");
  EXPECT_EQ(c.kind, K::kRegion);
  ASSERT_EQ(c.ranges.size(), 1u);
  EXPECT_EQ(c.ranges[0].first, "/blocks.0/Add");
  EXPECT_EQ(c.ranges[0].second, "/blocks.3/Mul");
  auto d = trt::ParseLayerName("Reformatting CopyNode for Input Tensor 0 to Conv_0 + Relu_1");
  EXPECT_EQ(d.kind, K::kReformat);
  EXPECT_EQ(d.reformat_target, "Conv_0 + Relu_1");
  EXPECT_EQ(trt::ParseLayerName("node_of_out_3").parts, (std::vector<std::string>{"out_3"}));
  EXPECT_EQ(trt::ParseLayerName("(Unnamed Layer* 7) [Shuffle]").kind, K::kUnnamed);
  EXPECT_EQ(trt::ParseOnnxMetadata("[ONNX Layer: Conv_0]\x1f[ONNX Layer: /a/b [x]/Relu]"),
            (std::vector<std::string>{"Conv_0", "/a/b [x]/Relu"}));
  EXPECT_EQ(trt::GuessOpType("/backbone/conv1/Conv"), "Conv");
  EXPECT_EQ(trt::GuessOpType("Relu_14"), "Relu");
  EXPECT_EQ(trt::GuessOpType("backbone.conv1"), "");
}

TEST(TrtLayerInfo, DetailedAppliesTypesAndShapes) {
  auto p = ImportFile(Data("trt8_bev.json"));
  ASSERT_TRUE(p.ok());
  auto info = trt::ParseLayerInfo(ReadFile(Data("trt8_bev_layers.json")).value(), "layers.json");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->layers[1].onnx_nodes.size(), 3u);
  ASSERT_TRUE(trt::ApplyLayerInfo(*info, &*p).ok());
  // The kind (ParameterType), as TensorRT's engine explorer reads it; the implementation
  // (LayerType) when there is no ParameterType, and beside the tactic.
  EXPECT_EQ(p->ops[1].op_type, "Convolution");
  EXPECT_EQ(p->ops[2].op_type, "CaskConvolution");
  EXPECT_EQ(ShapeToString(p->ops[1].output_shapes[0]), "6x16x32x88");
  EXPECT_NE(p->ops[1].attribution.find("; CaskConvolution tactic sm80_xmma"), std::string::npos)
      << p->ops[1].attribution;
}

TEST(TrtLayerInfo, FromAnotherEngineIsRefused) {
  auto p = ImportFile(Data("trt8_bev.json"));
  ASSERT_TRUE(p.ok());
  auto info = trt::ParseLayerInfo(ReadFile(Data("trt8_names_only.json")).value(), "other.json");
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->names_only);
  Status st = trt::ApplyLayerInfo(*info, &*p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("another engine"), std::string::npos) << st.message();
}

// --- perf script ---

TEST(PerfScriptImport, RealPythonRecording) {
  auto p = ImportFile(Data("perf_script_python.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->samples);
  EXPECT_EQ(p->samples->event, "cpu-clock");
  EXPECT_EQ(p->samples->unit, "ns");
  EXPECT_GT(p->samples->samples.size(), 10u);
  Golden("perf_script_python", *p);
}

TEST(PerfScriptImport, CommWithSpacesTidsAndInlineFrame) {
  auto p = ImportFile(Data("perf_script_threads.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->samples->samples.size(), 3u);
  const auto& s = *p->samples;
  EXPECT_EQ(s.thread_names.at(3107), "Web Content");
  EXPECT_EQ(s.samples[1].pid, 3101);
  EXPECT_EQ(s.samples[1].tid, 3108);
  EXPECT_EQ(s.frames[s.samples[0].stack[0]].function, "hot_loop(int, char const*)");
  EXPECT_EQ(s.frames[s.samples[0].stack[0]].module, "worker");
  EXPECT_TRUE(s.frames[s.samples[1].stack[1]].inlined);
  ASSERT_EQ(s.samples[2].stack.size(), 1u);
  EXPECT_EQ(s.frames[s.samples[2].stack[0]].function, "cold_path");
  Golden("perf_script_threads", *p);
}

// A zero-filled stretch (what a file cut while being written leaves, also glued to the end of a
// frame line) is skipped with a warning that counts it, and the samples around it are kept.
TEST(PerfScriptImport, ZeroFilledStretchesAreSkippedWithAWarning) {
  const std::string text = ReadFile(Data("perf_script_threads.txt")).value();
  const size_t cut = text.find("\n\n") + 1;  // after the first sample's last frame
  const std::string nuls(1 << 20, '\0');
  for (const std::string& damaged :
       {text.substr(0, cut - 1) + nuls + text.substr(cut - 1), text + nuls,
        text.substr(0, cut) + nuls + "\n" + text.substr(cut)}) {
    auto src = Source::FromBytes(damaged, "cut.txt");
    auto p = Import(*src, FindFormat("perf-script"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_EQ(p->samples->samples.size(), 3u);
    std::string warnings = Join(p->samples->warnings, "; ");
    EXPECT_NE(warnings.find("1048576 NUL bytes in cut.txt"), std::string::npos) << warnings;
  }
}

// --- Nsight Systems ---

TEST(NsysImport, SqliteExportIntoTheGpuSection) {
  auto p = ImportFile(Data("nsys_small.sqlite"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->gpu);
  const auto& g = *p->gpu;
  EXPECT_EQ(g.device_name, "NVIDIA Orin (nvgpu)");
  ASSERT_EQ(g.kernels.size(), 4u);
  EXPECT_EQ(g.kernels[0].name, "void conv2d_kernel<float>(float const*, float*, int)");
  EXPECT_EQ(g.kernels[0].tid, 4242);
  EXPECT_EQ(g.kernels[0].grid[0], 128);
  ASSERT_EQ(g.memcpys.size(), 4u);
  EXPECT_EQ(g.memcpys[0].kind, "HtoD");
  EXPECT_TRUE(g.memcpys[0].pageable);
  EXPECT_TRUE(g.memcpys[0].async);
  EXPECT_EQ(g.memcpys[1].kind, "DtoH");
  EXPECT_EQ(g.memsets.size(), 2u);
  EXPECT_EQ(g.api_calls[0].name, "cudaMemcpyAsync");
  ASSERT_EQ(p->ranges.size(), 4u);
  EXPECT_EQ(p->ranges[1].name, "preprocess");
  EXPECT_EQ(p->ranges[1].parent, 0);
  // The first kernel was launched inside "frame" (after "preprocess" ended).
  EXPECT_EQ(g.kernels[0].range, 0);
  EXPECT_EQ(g.memcpys[0].range, 1);
}

// `--cuda-memory-usage=true`: device memory per NVTX range (the innermost range open on the
// allocating thread), the device total's peak, what is still held at the end.
TEST(NsysImport, DeviceMemoryBecomesTheMemorySection) {
  auto p = ImportFile(Data("nsys_memory.sqlite"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto* m = p->sections.Find<memory::MemorySection>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->device, "cuda:0");
  constexpr double kMB = 1 << 20;
  std::map<std::string, const memory::MemStep*> steps;
  for (const auto& st : m->steps) steps[st.name] = &st;
  ASSERT_EQ(steps.size(), 3u);
  const auto& outside = *steps.at("(outside NVTX ranges)");
  EXPECT_EQ(outside.allocated_bytes, 64 * kMB);  // the weights; the pre-capture free is not -8
  EXPECT_EQ(outside.released_bytes, 0);
  EXPECT_EQ(outside.live_bytes, 64 * kMB);
  const auto& pre = *steps.at("preprocess");  // 4 MB per occurrence, pinned host not counted
  EXPECT_EQ(pre.allocated_bytes, 4 * kMB);
  EXPECT_EQ(pre.live_bytes, 68 * kMB);
  const auto& frame = *steps.at("frame");  // 16 MB workspace, frees it and the input buffer
  EXPECT_EQ(frame.allocated_bytes, 16 * kMB);
  EXPECT_EQ(frame.released_bytes, 20 * kMB);
  EXPECT_EQ(frame.live_bytes, 84 * kMB);
  EXPECT_EQ(m->peak_live_bytes, 84 * kMB);
  EXPECT_EQ(m->steps[static_cast<size_t>(m->peak_step)].name, "frame");
  EXPECT_NE(m->source.find("67108864 bytes still allocated at the end of the capture in 1 "
                           "allocation(s)"),
            std::string::npos)
      << m->source;
  const std::string degr = Join(p->meta.degradations, "\n");
  EXPECT_NE(degr.find("1 free(s) of cuda:0 memory allocated before the capture began not counted"),
            std::string::npos)
      << degr;
  EXPECT_TRUE(profile::Validate(*p).ok()) << profile::Validate(*p).message();
  report::ReportOptions o;
  o.only = {"memory"};
  std::string table;
  ASSERT_TRUE(report::FindFormat("table")->write(*p, o, &table).ok());
  EXPECT_NE(table.find("peak 88.08 MB allocated during step 'frame'"), std::string::npos) << table;

  // An export without the enum tables (codes as documented) and without the address column
  // (frees take their own size): the same totals.
  const std::string copy = ::testing::TempDir() + "/opscope_nsys_memory.sqlite";
  ASSERT_TRUE(WriteFileAtomic(copy, ReadFile(Data("nsys_memory.sqlite")).value()).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(copy.c_str(), &db), SQLITE_OK);
  for (const char* sql :
       {"DROP TABLE ENUM_CUDA_MEM_KIND", "DROP TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER",
        "ALTER TABLE CUDA_GPU_MEMORY_USAGE_EVENTS DROP COLUMN address"})
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
  auto q = ImportFile(copy);
  ASSERT_TRUE(q.ok()) << q.status().message();
  const auto* n = q->sections.Find<memory::MemorySection>();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->peak_live_bytes, 84 * kMB - 8 * kMB);  // the unmatched free now counts
  EXPECT_TRUE(EndsWith(n->source, "58720256 bytes still allocated at the end of the capture"))
      << n->source;
  std::remove(copy.c_str());
}

TEST(NsysImport, SqliteWithoutNsysTablesOrCorrupt) {
  std::string b = ReadFile(Data("nsys_small.sqlite")).value();
  auto trunc = FromText(b.substr(0, 5000), "nsys");
  EXPECT_FALSE(trunc.ok());
  auto junk = FromText(std::string("SQLite format 3\0", 16) + std::string(200, 'x'), "nsys");
  EXPECT_FALSE(junk.ok());
}

TEST(NsysStatsImport, SummariesAndTrace) {
  auto p = ImportFile(Data("nsys_stats_sum.csv"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 4u);
  EXPECT_EQ(p->ops[0].op_type, "kernel");
  EXPECT_NEAR(p->ops[0].runs_ms[0], 6.0, 1e-9);
  EXPECT_EQ(p->ops[2].name, "[CUDA memcpy Host-to-Device]");
  Golden("nsys_stats_sum", *p);
  auto t = ImportFile(Data("nsys_stats_trace.csv"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE(t->gpu);
  ASSERT_EQ(t->gpu->kernels.size(), 1u);
  EXPECT_EQ(t->gpu->kernels[0].grid[0], 128);
  ASSERT_EQ(t->gpu->memcpys.size(), 1u);
  EXPECT_EQ(t->gpu->memcpys[0].bytes, 4194000);
  EXPECT_EQ(t->gpu->memcpys[0].kind, "HtoD");
  EXPECT_TRUE(t->gpu->memcpys[0].pageable);
}

// Found by import_nsys_stats_fuzz: an Instances value of 1e131 was converted to int64
// (undefined behaviour); counts and times beyond their ranges are one clear error, and
// optional ids that are not ids count as absent.
TEST(NsysStatsImport, OutOfRangeNumbersAreErrorsNotConversions) {
  const std::string head =
      "\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\","
      "\"Max (ns)\",\"StdDev (ns)\",\"Name\"\n";
  for (const char* count : {"1e131", "-3", "2.5", "nan"}) {
    auto p = FromText(head + "\"100.0\",\"2000\",\"" + count +
                          "\",\"20.0\",\"20.0\",\"19\",\"21\",\"0.5\",\"k\"\n",
                      "nsys_stats");
    ASSERT_FALSE(p.ok()) << count;
    EXPECT_NE(p.status().message().find("Instances"), std::string::npos) << p.status().message();
  }
  auto ok =
      FromText(head + "\"100.0\",\"2000\",\"100\",\"20.0\",\"20.0\",\"19\",\"21\",\"0.5\",\"k\"\n",
               "nsys_stats");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
}

// --- PyTorch ---

TEST(PytorchImport, KernelsLinkedToTopLevelOpsByCorrelation) {
  auto p = ImportFile(Data("pytorch_gpu.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.runs, 2);
  ASSERT_EQ(p->e2e.runs_ms.size(), 2u);
  const profile::OpRecord* conv = nullptr;
  for (const auto& op : p->ops)
    if (op.op_type == "aten::conv2d") conv = &op;
  ASSERT_NE(conv, nullptr);
  // The kernel launched from aten::cudnn_convolution counts for aten::conv2d (its top level).
  ASSERT_EQ(conv->runs_ms.size(), 2u);
  EXPECT_NEAR(conv->runs_ms[0], 0.600, 1e-9);
  EXPECT_NEAR(conv->runs_ms[1], 0.580, 1e-9);
  EXPECT_EQ(ShapeToString(conv->input_shapes[0]), "1x3x224x224");
  ASSERT_TRUE(p->gpu);
  EXPECT_EQ(p->gpu->kernels.size(), 4u);
  EXPECT_EQ(p->gpu->memcpys.size(), 1u);
  EXPECT_EQ(p->gpu->memcpys[0].kind, "DtoH");
  EXPECT_TRUE(p->gpu->memcpys[0].pageable);
  Golden("pytorch_gpu", *p);
}

TEST(PytorchImport, LegacyCpuOnlyArray) {
  auto p = ImportFile(Data("pytorch_legacy_cpu.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 2u);  // aten::linear (with t and addmm inside) and aten::relu
  EXPECT_NEAR(p->ops[0].runs_ms[0], 0.12025, 1e-9);
  Golden("pytorch_legacy_cpu", *p);
}

// profile_memory=True: the [memory] events become the memory section, each given to the
// top-level op running on its thread; per run allocated/freed, the allocator's total while the
// op ran; events outside every op and unusable ones are counted as degradations.
TEST(PytorchImport, MemoryEventsBecomeTheMemorySection) {
  auto p = ImportFile(Data("pytorch_memory.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto* m = p->sections.Find<memory::MemorySection>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->device, "cpu");
  ASSERT_EQ(m->steps.size(), p->ops.size());
  ASSERT_EQ(m->steps.size(), 2u);
  const memory::MemStep& conv = m->steps[0];
  EXPECT_EQ(conv.name, p->ops[0].name);
  EXPECT_EQ(p->ops[0].op_type, "aten::conv2d");
  EXPECT_EQ(conv.allocated_bytes, (262144.0 * 2 + 524288) / 2);  // per run
  EXPECT_EQ(conv.released_bytes, 262144.0 / 2);
  EXPECT_EQ(conv.live_bytes, 2621440);         // the highest total while it ran, over the runs
  EXPECT_EQ(m->steps[1].live_bytes, 2621440);  // relu of run 1 starts at that total
  EXPECT_EQ(m->peak_step, 0);
  EXPECT_EQ(m->peak_live_bytes, 2621440);
  EXPECT_TRUE(profile::Validate(*p).ok());
  std::string degr = Join(p->meta.degradations, "\n");
  EXPECT_NE(degr.find("2 of 8 [memory] events of cpu happened outside"), std::string::npos) << degr;
  EXPECT_NE(degr.find("1 [memory] event(s) had no usable time"), std::string::npos) << degr;
  std::string table;
  report::ReportOptions o;
  o.only = {"memory"};
  ASSERT_TRUE(report::RenderTables(*p, o, &table).ok());
  EXPECT_NE(table.find("memory of cpu (PyTorch profiler [memory] events"), std::string::npos)
      << table;
}

TEST(PytorchImport, TruncatedTraceIsAnError) {
  std::string b = ReadFile(Data("pytorch_gpu.json")).value();
  auto p = FromText(b.substr(0, b.size() * 2 / 3), "pytorch");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("truncated"), std::string::npos) << p.status().message();
}

// --- tegrastats ---

// JetPack 6 on an Orin: stamped samples, per-core CPU load and clock (off cores), EMC and GPU load
// and clock (the larger GPC clock), temperatures without the -256C sensors, power rails' current
// values; the telemetry section renders as counter tracks.
TEST(TegrastatsImport, OrinLogBecomesTheTelemetrySection) {
  auto p = ImportFile(Data("tegrastats_orin.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "import/tegrastats");
  const auto* t = p->sections.Find<telemetry::TelemetrySection>();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->sample_ns, (std::vector<int64_t>{0, 1'000'000'000, 3'000'000'000}));
  EXPECT_EQ(t->Find("gpu load")->values, (std::vector<double>{0, 97, 98}));
  EXPECT_EQ(t->Find("gpu clock")->values, (std::vector<double>{305, 1300, 1300}));
  EXPECT_EQ(t->Find("emc clock")->values[1], 3199);
  EXPECT_EQ(t->Find("cpu0 clock")->values[1], 2201);
  EXPECT_EQ(t->Find("cpu4 load")->values[1], 0);  // "off"
  EXPECT_EQ(t->Find("ram used")->max, 30536);
  EXPECT_EQ(t->Find("power VDD_GPU_SOC")->values, (std::vector<double>{2408, 14876, 15102}));
  EXPECT_EQ(t->Find("thermal tj")->values[2], 52.0);
  EXPECT_EQ(t->environment.at("off: thermal CV0"), "in every sample (-256C)");
  EXPECT_EQ(t->Find("thermal CV0"), nullptr);
  EXPECT_EQ(t->Find("power NC"), nullptr);
  EXPECT_EQ(t->Find("vic clock")->values[0], 729);
  EXPECT_TRUE(p->meta.degradations.empty()) << Join(p->meta.degradations, "\n");
  std::string trace;
  ASSERT_TRUE(report::FindFormat("chrome")->write(*p, report::ReportOptions{}, &trace).ok());
  EXPECT_NE(trace.find("\"gpu load (%)\""), std::string::npos);
  auto check = report::CheckChromeTrace(trace);  // a counters-only trace: drawn, not refused
  EXPECT_TRUE(check.ok()) << check.status().message();
  std::string table;
  ASSERT_TRUE(report::RenderTables(*p, report::ReportOptions{}, &table).ok());
  EXPECT_NE(table.find("(tegrastats log), 3 samples"), std::string::npos) << table;
}

// JetPack 4 on a Nano: no stamps (one second apart, said), EMC/GR3D load without clocks, rails as
// "cur/avg" without a unit.
TEST(TegrastatsImport, Jetpack4LogWithoutStamps) {
  auto p = ImportFile(Data("tegrastats_nano.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto* t = p->sections.Find<telemetry::TelemetrySection>();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->sample_ns, (std::vector<int64_t>{0, 1'000'000'000}));
  EXPECT_EQ(t->Find("gpu load")->values, (std::vector<double>{0, 99}));
  EXPECT_EQ(t->Find("gpu clock"), nullptr);
  EXPECT_EQ(t->Find("power POM_5V_IN")->values, (std::vector<double>{2242, 5921}));
  EXPECT_EQ(t->Find("thermal PMIC")->values[0], 100);
  EXPECT_NE(Join(p->meta.degradations, "\n").find("2 of 2 samples have no time stamp"),
            std::string::npos);
  EXPECT_FALSE(FromText("RAM is not a tegrastats line\n", "tegrastats").ok());
}

// --- one loader for every profile file ---

// report/diff/html_render read any file through LoadProfileFile: opscope's JSON and record files
// are registry entries like the foreign formats (their stats left as written), a `{` file no
// sniffer claims is read as an opscope profile for its message, anything else names the formats.
TEST(LoadProfileFile, NativeAndForeignByContent) {
  const std::string dir = ::testing::TempDir() + "/opscope_load_any";
  std::filesystem::create_directories(dir);
  auto json =
      LoadProfileFile(std::string(OPSCOPE_SOURCE_DIR) + "/src/analysis/testdata/model_before.json");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->meta.kind, "profile");
  auto direct = profile::LoadProfile(std::string(OPSCOPE_SOURCE_DIR) +
                                     "/src/analysis/testdata/model_before.json");
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(profile::ToJsonString(*json), profile::ToJsonString(*direct));
  auto ort = LoadProfileFile(Data("ort_bev_all.json"));
  ASSERT_TRUE(ort.ok()) << ort.status().message();
  EXPECT_EQ(ort->meta.kind, "import/ort");
  EXPECT_EQ(*Detect("OPSREC\x01", "x.rec"), FindFormat("opscope-record"));
  EXPECT_EQ(*Detect("OPS", "x.rec"), FindFormat("opscope-record"));
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    return dir + "/" + name;
  };
  auto empty = LoadProfileFile(write("empty.json", ""));
  EXPECT_EQ(empty.status().message(), dir + "/empty.json: file is empty (not a profile)");
  auto braces = LoadProfileFile(write("half.json", "{\"schema\": \"opscope.prof"));
  EXPECT_NE(braces.status().message().find("not valid JSON"), std::string::npos)
      << braces.status().message();
  auto text = LoadProfileFile(write("notes.txt", "hello\n"));
  EXPECT_NE(text.status().message().find("not an opscope profile (neither a record file nor a "
                                         "JSON profile) nor a format opscope imports (opscope, "),
            std::string::npos)
      << text.status().message();
}

// ONNX Runtime writes each node's activation_size, parameter_size and output_size: the memory
// section per node (outputs allocated, weights, inputs + outputs as what it touches), which
// stays pointed at the right ops when --model joins the rows to the graph.
TEST(OrtImport, NodeSizesBecomeTheMemorySection) {
  auto p = ImportFile(Data("ort_bev_memory.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto* m = p->sections.Find<memory::MemorySection>();
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->steps.size(), p->ops.size());
  EXPECT_EQ(m->device, "CPUExecutionProvider");
  const memory::MemStep* conv1 = nullptr;
  for (const auto& st : m->steps)
    if (st.name == "backbone.conv1.relu_nchwc") conv1 = &st;
  ASSERT_NE(conv1, nullptr);
  EXPECT_EQ(conv1->weight_bytes, 1792);
  EXPECT_EQ(conv1->allocated_bytes, 1081344);
  // The arena's bytes in use after the node in the first run (ORT 1.17+'s mem_bytes_in_use):
  // every activation alive then, not only the node's 811008 + 1081344 bytes of inputs and
  // outputs. Later runs take one memory-pattern block up front (67109120 after every node).
  EXPECT_EQ(conv1->live_bytes, 2097408);
  EXPECT_EQ(conv1->arena_live_bytes, 2097408);
  EXPECT_EQ(m->arena_bytes, 142606592);  // mem_arena_held, at most
  EXPECT_EQ(m->peak_live_bytes, 67109120);
  ASSERT_GE(m->peak_step, 0);
  EXPECT_EQ(m->steps[static_cast<size_t>(m->peak_step)].name, "lift.to_channels_last");
  EXPECT_NE(m->source.find("mem_bytes_in_use"), std::string::npos) << m->source;
  EXPECT_NE(m->source.find("68288768 bytes"), std::string::npos) << m->source;  // over all runs
  EXPECT_EQ(p->ops[static_cast<size_t>(conv1->op)].name, conv1->name);
  // Joined to the model: the rows change, the steps follow them.
  auto joined = ImportFile(Data("ort_bev_memory.json"));
  ASSERT_TRUE(joined.ok());
  ModelJoinOptions jo;
  jo.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx";
  auto sum = JoinModel(&*joined, jo);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_TRUE(profile::Validate(*joined).ok()) << profile::Validate(*joined).message();
  const auto* jm = joined->sections.Find<memory::MemorySection>();
  for (const auto& st : jm->steps)
    if (st.op >= 0)
      EXPECT_TRUE(joined->ops[static_cast<size_t>(st.op)].name == st.name ||
                  joined->ops[static_cast<size_t>(st.op)].step == st.name)
          << st.name;
}

// A file whose first run already used a cached memory pattern (profiling started after warm-up
// runs): the arena's in-use bytes are flat, so live falls back to each node's inputs + outputs,
// and the section says why.
TEST(OrtImport, ArenaStatsOfACachedPatternAreNotTakenForLiveBytes) {
  auto p = FromText(R"([
{"cat":"Session","name":"model_run","ts":0,"dur":100,"ph":"X","pid":1,"tid":1},
{"cat":"Node","name":"a_kernel_time","ts":10,"dur":20,"ph":"X","pid":1,"tid":1,
 "args":{"op_name":"Relu","activation_size":"400","output_size":"400","parameter_size":"0",
 "mem_bytes_in_use":"9000","mem_in_use_delta":"0","mem_in_use_peak":"9000",
 "mem_arena_held":"16384"}},
{"cat":"Node","name":"b_kernel_time","ts":40,"dur":20,"ph":"X","pid":1,"tid":1,
 "args":{"op_name":"Relu","activation_size":"400","output_size":"400","parameter_size":"0",
 "mem_bytes_in_use":"9000","mem_in_use_delta":"0","mem_in_use_peak":"9000",
 "mem_arena_held":"16384"}}
])",
                    "ort");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto* m = p->sections.Find<memory::MemorySection>();
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->steps.size(), 2u);
  EXPECT_EQ(m->steps[0].live_bytes, 800);
  EXPECT_EQ(m->steps[0].arena_live_bytes, 0);
  EXPECT_EQ(m->arena_bytes, 16384);
  EXPECT_NE(m->source.find("cached memory pattern"), std::string::npos) << m->source;
}

// --- RKNN ---

// eval_perf's layer table with the runtime's log prefix: rows by FullName's node, placement,
// cycles, MAC usage, work load, bytes; the last table of the log wins; the findings see the CPU
// fallback and the layer waiting on DDR.
TEST(RknnImport, Toolkit2LayerTableWithPlacementAndCycles) {
  auto p = ImportFile(Data("rknn_bev_perf.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "import/rknn");
  ASSERT_EQ(p->ops.size(), 10u);
  const profile::OpRecord& conv = p->ops[1];
  EXPECT_EQ(conv.name, "backbone.conv1");
  EXPECT_EQ(conv.op_type, "ConvRelu");
  EXPECT_EQ(conv.source_nodes, (std::vector<std::string>{"backbone.conv1"}));
  EXPECT_NEAR(conv.runs_ms[0], 3.412, 1e-12);
  EXPECT_EQ(ShapeToString(conv.input_shapes[1]), "32x3x3x3");
  EXPECT_EQ(conv.counters.at("rknn.npu_cycles"), 1622016);
  EXPECT_EQ(conv.counters.at("rknn.mac_usage_pct"), 8.11);
  EXPECT_EQ(conv.counters.at("rknn.core0_load_pct"), 100);
  EXPECT_EQ(conv.bytes, 3168.0 * 1024);
  EXPECT_EQ(p->ops[6].name, "lift.grid_sample");
  EXPECT_EQ(p->ops[6].counters.at("rknn.cpu"), 1);
  EXPECT_EQ(p->ops[4].output_shapes.size(), 1u);  // "(1,48,64,176),...": the list was cut
  ASSERT_EQ(p->e2e.runs_ms.size(), 1u);
  EXPECT_NEAR(p->e2e.runs_ms[0], 41.693, 1e-12);
  EXPECT_EQ(p->meta.extra.at("rknn.cpu_layers"), "4");
  analysis::Diagnose(&*p, nullptr);
  std::string rules;
  for (const auto& f : p->findings) rules += f.rule + ": " + f.title + " | " + f.evidence + "\n";
  EXPECT_NE(rules.find("npu-cpu-fallback: layers that fell back to the CPU take 74.6%"),
            std::string::npos)
      << rules;
  EXPECT_NE(rules.find("GridSample, Softmax"), std::string::npos) << rules;
  EXPECT_NE(rules.find("npu-memory-bound"), std::string::npos) << rules;
  EXPECT_NE(rules.find("depthnet.split (Split, DDR 281984 vs NPU 0 cycles)"), std::string::npos)
      << rules;
}

TEST(RknnImport, Toolkit1PerformanceTable) {
  auto p = ImportFile(Data("rknn1_perf.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 5u);
  EXPECT_EQ(p->ops[0].name, "convolution.relu.pooling.layer2_2");
  EXPECT_EQ(p->ops[1].name, "convolution.relu.pooling.layer2_2#2");
  EXPECT_EQ(p->ops[0].op_type, "convolution");
  EXPECT_NEAR(p->e2e.runs_ms[0], 0.869, 1e-12);
  EXPECT_FALSE(FromText("Network Layer Information Table\nID OpType Time(us)\n", "rknn").ok());
}

// --- TFLite ---

TEST(TfliteImport, CurrentLayoutSkipsInitializationAndReadsDelegates) {
  auto p = ImportFile(Data("tflite_v2.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 7u);  // not the AllocateTensors row of the initialization table
  EXPECT_EQ(p->ops[0].name, "backbone.conv1");
  EXPECT_EQ(p->ops[0].op_type, "CONV_2D");
  EXPECT_NEAR(p->ops[0].runs_ms[0], 4.880, 1e-9);
  EXPECT_EQ(p->ops[6].name, "bev_encoder.conv1, bev_encoder.conv2");
  EXPECT_EQ(p->meta.runs, 50);
  ASSERT_EQ(p->e2e.runs_ms.size(), 1u);
  EXPECT_NEAR(p->e2e.runs_ms[0], 40.1235, 1e-9);
  Golden("tflite_v2", *p);
}

TEST(TfliteImport, OldLayoutWithoutTimesCalled) {
  auto p = ImportFile(Data("tflite_v1.txt"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 3u);
  EXPECT_EQ(p->ops[1].name, "MobilenetV1/Conv2d_1_depthwise/Relu6");
  EXPECT_NEAR(p->ops[1].runs_ms[0], 2.169, 1e-9);
  Golden("tflite_v1", *p);
}

TEST(TfliteImport, DelegateRowJoinsItsNodes) {
  auto p = ImportFile(Data("tflite_v2.txt"));
  ASSERT_TRUE(p.ok());
  ModelJoinOptions o;
  o.model_path = Model();
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_EQ(sum->matched_rows, 7u);
  bool conv2 = false;
  for (const auto& op : p->ops)
    conv2 = conv2 || (op.name == "bev_encoder.conv2" && op.status == profile::OpStatus::kFused);
  EXPECT_TRUE(conv2);
}

TEST(TfliteImport, CorruptRowIsAnError) {
  std::string t = ReadFile(Data("tflite_v1.txt")).value();
  size_t at = t.find("2.169");
  t.replace(at, 5, "-2.16");
  auto p = FromText(t, "tflite");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("negative"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find(":8:"), std::string::npos) << p.status().message();
}

// --- Arm NN ---

TEST(ArmnnImport, WorkloadsPerInferenceWithBackends) {
  auto p = ImportFile(Data("armnn_cpuacc.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 4u);
  EXPECT_EQ(p->ops[1].name, "backbone.conv1");
  EXPECT_EQ(p->ops[1].op_type, "Convolution2d");
  ASSERT_EQ(p->ops[1].runs_ms.size(), 2u);
  EXPECT_NEAR(p->ops[1].runs_ms[0], 0.8125, 1e-9);
  EXPECT_NEAR(p->ops[1].runs_ms[1], 0.800, 1e-9);
  EXPECT_EQ(p->meta.extra["armnn.backends"], "CpuAcc:2 CpuRef:1");
  EXPECT_EQ(p->e2e.runs_ms.size(), 2u);
  Golden("armnn_cpuacc", *p);
}

TEST(ArmnnImport, EmbeddedInAnExecuteNetworkLog) {
  auto p = ImportFile(Data("armnn_executenetwork_gpuacc.log"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 2u);
  EXPECT_EQ(p->ops[0].attribution, "Arm NN wall clock on GpuAcc");
  EXPECT_NEAR(p->ops[0].runs_ms[0], 2.0, 1e-9);
  Golden("armnn_executenetwork_gpuacc", *p);
}

// --- nvprof ---

TEST(NvprofImport, SummaryGpuActivitiesOnly) {
  auto p = ImportFile(Data("nvprof_summary.csv"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 3u);  // API calls are not GPU rows
  EXPECT_EQ(p->ops[0].op_type, "kernel");
  EXPECT_NEAR(p->ops[0].runs_ms[0], 12.25, 1e-9);
  EXPECT_EQ(p->ops[1].op_type, "memcpy");
  Golden("nvprof_summary", *p);
}

TEST(NvprofImport, GpuTraceWithUnitsRow) {
  auto p = ImportFile(Data("nvprof_trace.csv"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->gpu);
  ASSERT_EQ(p->gpu->kernels.size(), 2u);
  EXPECT_EQ(p->gpu->kernels[0].name, "void conv2d_kernel<float>(float const *, float*, int)");
  EXPECT_EQ(p->gpu->kernels[0].end_ns - p->gpu->kernels[0].start_ns, 122500);
  EXPECT_EQ(p->gpu->kernels[0].static_shared_bytes, 4096);
  ASSERT_EQ(p->gpu->memcpys.size(), 2u);
  EXPECT_EQ(p->gpu->memcpys[0].bytes, 4 << 20);
  EXPECT_TRUE(p->gpu->memcpys[0].pageable);
  EXPECT_EQ(p->gpu->memcpys[1].kind, "DtoH");
  EXPECT_EQ(p->gpu->device_name, "Xavier (0)");
}

TEST(NvprofImport, ShortRowIsAnError) {
  std::string t = ReadFile(Data("nvprof_trace.csv")).value();
  auto p = FromText(t.substr(0, t.size() - 30), "nvprof");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("fields"), std::string::npos) << p.status().message();
}

// Quoted fields may hold line breaks (RFC 4180); the reader used to split lines first, so such a
// row was "N fields, the header has M".
TEST(NvprofImport, QuotedNameWithALineBreakIsOneRow) {
  std::string t = ReadFile(Data("nvprof_trace.csv")).value();
  const std::string name = "relu_kernel(float*, int)";
  ASSERT_NE(t.find(name), std::string::npos);
  t.replace(t.find(name), name.size(), "relu_kernel(float*,\r\n int)");
  auto p = FromText(t, "nvprof");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->gpu);
  ASSERT_EQ(p->gpu->kernels.size(), 2u);
  EXPECT_NE(p->gpu->kernels[1].name.find("relu_kernel(float*,\r\n int)"), std::string::npos)
      << p->gpu->kernels[1].name;
  EXPECT_EQ(p->gpu->memcpys.size(), 2u);  // the row after it is read as before
}

TEST(NsysStatsImport, QuotedNameWithALineBreakIsOneRow) {
  std::string t = ReadFile(Data("nsys_stats_sum.csv")).value();
  const std::string name = "relu_kernel(float*, int)";
  t.replace(t.find(name), name.size(), "relu_kernel(float*,\n int)");
  auto p = FromText(t, "nsys_stats");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 4u);
  EXPECT_EQ(p->ops[1].name, "relu_kernel(float*,\n int)");
  // A quote left open is the error, with the line it opened on.
  const std::string cut = t.substr(0, t.find("relu_kernel") + 4);
  auto bad = FromText(cut, "nsys_stats");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 5: a quoted field is not closed"), std::string::npos)
      << bad.status().message();
}

// --- registry ---

TEST(Detect, ByContentNotExtension) {
  for (const char* f : {"ort_bev_all.json", "ort_2019.json"})
    EXPECT_STREQ(Detect(ReadFile(Data(f)).value(), f).value()->name, "ort") << f;
  for (const char* f : {"trt8_bev.json", "trt7_bev.json"})
    EXPECT_STREQ(Detect(ReadFile(Data(f)).value(), f).value()->name, "tensorrt") << f;
  EXPECT_STREQ(Detect(ReadFile(Data("perf_script_threads.txt")).value(), "x.json").value()->name,
               "perf-script");
  // opscope's own profile is an entry of the registry too.
  EXPECT_STREQ(Detect("{\"schema\": \"opscope.profile/1\"}", "p.json").value()->name, "opscope");
  auto none = Detect("{\"something\": \"else\"}", "p.json");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--from"), std::string::npos);
}

TEST(Detect, AFileThatSniffsAsTwoFormatsIsRefused) {
  auto both = Detect(R"([{"cat":"Node","ph":"X","name":"a_kernel_time","timeMs":1,"averageMs":1}])",
                     "both.json");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("ort and tensorrt"), std::string::npos)
      << both.status().message();
  EXPECT_NE(both.status().message().find("--from"), std::string::npos);
}

TEST(Detect, EmptyFileAndMissingFile) {
  auto src = Source::FromBytes("", "empty.json");
  EXPECT_FALSE(Import(*src, FindFormat("ort")).ok());
  EXPECT_FALSE(ImportFile("/nonexistent/x.json").ok());
}

// --- model join ---

TEST(ModelJoin, OrtFusedNodesMapBackToTheirChain) {
  auto p = ImportFile(Data("ort_bev_all.json"));
  ASSERT_TRUE(p.ok());
  ModelJoinOptions o;
  o.model_path = Model();
  o.runtime = "ONNX Runtime";
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_TRUE(sum->costs) << sum->engine_note;
  profile::FinalizeStats(*p);
  ASSERT_TRUE(profile::Validate(*p).ok());
  // "backbone.conv1.relu_nchwc" (op_name Conv) is Conv + BatchNormalization + Relu.
  const profile::OpRecord* conv = nullptr;
  const profile::OpRecord* bn = nullptr;
  for (const auto& op : p->ops) {
    if (op.name == "backbone.conv1") conv = &op;
    if (op.name == "backbone.conv1.bn") bn = &op;
  }
  ASSERT_TRUE(conv && bn);
  EXPECT_EQ(conv->status, profile::OpStatus::kFused);
  EXPECT_EQ(conv->op_type, "Conv");
  EXPECT_GT(conv->flops, 0);
  EXPECT_EQ(bn->stats.median, 0);  // folded into the Conv's weights: no share of the time
  EXPECT_NE(conv->attribution.find("split by estimated cost"), std::string::npos);
  EXPECT_GT(sum->matched_share, 0.5);
  Golden("ort_bev_all.model", *p);
}

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// ONNX Runtime 1.30 (level "all", CPU EP) on tests/models/control_flow.onnx: a Loop whose body
// holds an If. The body's node events lie inside the Loop's and the branches' inside the If's;
// the parents are exclusive of them and the body nodes join their model nodes under the engine's
// names ("Loop_0/body/early"), so the whole time is attributed and nothing is counted twice (it
// was 63.9% with the If and its branches unmatched, and the Loop's time holding theirs).
TEST(ModelJoin, OrtControlFlowBodiesJoinTheirNodes) {
  auto p = ImportFile(Data("ort_control_flow_all.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NE(p->meta.extra["ort.nested_events"].find("node events ran inside another node's"),
            std::string::npos);
  double before = 0;
  for (const auto& op : p->ops) before += MeanOf(op.runs_ms);
  ModelJoinOptions o;
  o.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/control_flow.onnx";
  o.runtime = "ONNX Runtime";
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_DOUBLE_EQ(sum->matched_share, 1.0);
  EXPECT_TRUE(sum->unmatched.empty());
  std::map<std::string, const profile::OpRecord*> by;
  double after = 0;
  for (const auto& op : p->ops) {
    by[op.name] = &op;
    after += MeanOf(op.runs_ms);
  }
  EXPECT_NEAR(after, before, 1e-9);
  ASSERT_TRUE(by.count("Loop_0/body/early"));
  ASSERT_TRUE(by.count("Loop_0/body/If_0"));
  ASSERT_TRUE(by.count("Loop_0/body/If_0/then_branch/fast_mm") ||
              by.count("Loop_0/body/If_0/else_branch/fast_mm"));
  // The Loop's own time is what is left of its event after its body's.
  EXPECT_LT(MeanOf(by["Loop_0"]->runs_ms), 0.217);
}

// ONNX Runtime's renamings as its transformers write them (onnxruntime 1.30): GemmActivation's
// "fused <node>", the trailing-slash "<node>/LayerNormFusion/", a layout copy's "<node>_token_N";
// and an inserted "Transpose_token_N" (named after its op type, no model node) charged to the row
// that reads its output, a ReorderOutput to the row that wrote its input, however far back.
TEST(ModelJoin, OrtRenamingsAndInsertedLayoutRows) {
  auto p = FromText(R"([
    {"cat":"Session","ph":"X","ts":0,"dur":1000,"name":"model_run"},
    {"cat":"Node","ph":"X","ts":10,"dur":10,"name":"backbone.conv1_token_7_kernel_time","args":{"op_name":"Conv"}},
    {"cat":"Node","ph":"X","ts":20,"dur":10,"name":"depthnet_kernel_time","args":{"op_name":"Conv",
      "input_type_shape":[{"float":[6,64,16,44]}],"output_type_shape":[{"float":[6,64,16,44]}]}},
    {"cat":"Node","ph":"X","ts":30,"dur":10,"name":"Transpose_token_2_kernel_time","args":{"op_name":"Transpose",
      "input_type_shape":[{"float":[1,32,128,128]}],"output_type_shape":[{"float":[1,128,128,32]}]}},
    {"cat":"Node","ph":"X","ts":40,"dur":10,"name":"bev_encoder.conv1.relu/LayerNormFusion/_kernel_time","args":{"op_name":"Relu",
      "input_type_shape":[{"float":[1,128,128,32]}]}},
    {"cat":"Node","ph":"X","ts":50,"dur":10,"name":"fused head.regression_kernel_time","args":{"op_name":"FusedConv"}},
    {"cat":"Node","ph":"X","ts":60,"dur":10,"name":"ReorderOutput_token_9_kernel_time","args":{"op_name":"ReorderOutput",
      "input_type_shape":[{"float":[6,64,16,44]}],"output_type_shape":[{"float":[6,64,16,44]}]}}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ModelJoinOptions o;
  o.model_path = Model();
  o.runtime = "ONNX Runtime";
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_DOUBLE_EQ(sum->matched_share, 1.0);
  std::map<std::string, const profile::OpRecord*> by;
  for (const auto& op : p->ops) by[op.name] = &op;
  ASSERT_TRUE(by.count("backbone.conv1") && by.count("bev_encoder.conv1.relu") &&
              by.count("head.regression") && by.count("depthnet"));
  EXPECT_EQ(by["backbone.conv1"]->step, "backbone.conv1_token_7");
  EXPECT_EQ(by["head.regression"]->step, "fused head.regression");
  EXPECT_NE(by["bev_encoder.conv1.relu"]->attribution.find("plus 'Transpose_token_2' (Transpose"),
            std::string::npos)
      << by["bev_encoder.conv1.relu"]->attribution;
  EXPECT_NE(by["depthnet"]->attribution.find("plus 'ReorderOutput_token_9' (ReorderOutput"),
            std::string::npos)
      << by["depthnet"]->attribution;
  EXPECT_NEAR(MeanOf(by["depthnet"]->runs_ms), 0.020, 1e-12);
  EXPECT_EQ(by.count("Transpose_token_2"), 0u);
}

// ONNX Runtime 1.30 (level "all") on tests/models/qdq_convnet.onnx: its QDQ fusions and the NHWC
// transformer leave rows 'conv1_token_4' (QLinearConv), 'pool_token_11' (NhwcMaxPool) and
// 'conv2_token_9'; the DequantizeLinear nodes feeding each and the QuantizeLinear after it
// (through the Relu) have no rows and join its group, so every node of the model is timed (it
// was 37% of the time on 11 of 20 nodes). The inserted Transposes go to the rows that read what
// they wrote: 'Transpose' (NCHW to NHWC) to conv1, 'Transpose_token_7' (back to NCHW after conv2)
// to conv2.out.dq (both went to conv1 while rows were in node_index order, not execution order).
TEST(ModelJoin, OrtQdqFusionsTakeTheirQuantizeNodes) {
  auto p = ImportFile(Data("ort_qdq_convnet_all.json"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ModelJoinOptions o;
  o.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/qdq_convnet.onnx";
  o.runtime = "ONNX Runtime";
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_DOUBLE_EQ(sum->matched_share, 1.0);
  EXPECT_EQ(sum->nodes_matched, 20u);
  std::map<std::string, const profile::OpRecord*> by;
  for (const auto& op : p->ops) by[op.name] = &op;
  for (const char* n : {"x.dq", "conv1.wdq", "conv1.relu", "conv1.out.q"}) {
    ASSERT_TRUE(by.count(n)) << n;
    EXPECT_EQ(by[n]->status, profile::OpStatus::kFused) << n;
    EXPECT_EQ(by[n]->step, "conv1_token_4") << n;
  }
  EXPECT_EQ(by["conv1.out.dq"]->step, "pool_token_11");
  EXPECT_EQ(by["pool.out.q"]->step, "pool_token_11");
  EXPECT_EQ(by["conv2.out.q"]->step, "conv2_token_9");
  EXPECT_NE(by["conv1"]->attribution.find("plus 'Transpose' (Transpose"), std::string::npos)
      << by["conv1"]->attribution;
  EXPECT_NE(by["conv2.out.dq"]->attribution.find("plus 'Transpose_token_7' (Transpose"),
            std::string::npos)
      << by["conv2.out.dq"]->attribution;
  // A float kernel's row takes nothing around it: the Gemm's weight DequantizeLinear ran itself.
  EXPECT_EQ(by["fc.wdq"]->step, "fc.wdq");
}

TEST(ModelJoin, OrtExactNamesAreOneToOne) {
  auto p = ImportFile(Data("ort_bev_basic.json"));
  ASSERT_TRUE(p.ok());
  ModelJoinOptions o;
  o.model_path = Model();
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  for (const auto& op : p->ops)
    if (op.name == "depth.softmax") {
      EXPECT_EQ(op.status, profile::OpStatus::kExecuted);
      EXPECT_GT(op.bytes, 0);
    }
}

TEST(ModelJoin, TensorRtWithLayerInfoAndRegions) {
  auto p = ImportFile(Data("trt8_bev.json"));
  ASSERT_TRUE(p.ok());
  auto info = trt::ParseLayerInfo(ReadFile(Data("trt8_bev_layers.json")).value(), "layers.json");
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(trt::ApplyLayerInfo(*info, &*p).ok());
  ModelJoinOptions o;
  o.model_path = Model();
  o.runtime = "TensorRT";
  for (const auto& l : info->layers) o.sources[l.name] = l.onnx_nodes;
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  profile::FinalizeStats(*p);
  ASSERT_TRUE(profile::Validate(*p).ok());
  // Unnamed shuffle: unmatched, listed with its share; the reformat is TensorRT's own.
  ASSERT_EQ(sum->unmatched.size(), 1u);
  EXPECT_EQ(sum->unmatched[0].first, "(Unnamed Layer* 40) [Shuffle]");
  EXPECT_NEAR(sum->unmatched[0].second, 0.019 / 1.0, 1e-3);
  Golden("trt8_bev.model", *p);
}

TEST(ModelJoin, TensorRt7NamesWithoutLayerInfo) {
  auto p = ImportFile(Data("trt7_bev.json"));
  ASSERT_TRUE(p.ok());
  ModelJoinOptions o;
  o.model_path = Model();
  o.runtime = "TensorRT";
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  // node_of_lift.flatten resolves; upsample_3 does not.
  EXPECT_EQ(sum->matched_rows, 8u);
  ASSERT_EQ(sum->unmatched.size(), 1u);
  EXPECT_EQ(sum->unmatched[0].first, "upsample_3");
  Golden("trt7_bev.model", *p);
}

TEST(ModelJoin, ForeignNodeRangeCoversTheNodesBetween) {
  auto p = FromText(
      R"([{"count":10},{"name":"{ForeignNode[lift.depth_unsqueeze...lift.flatten]}","timeMs":1,"averageMs":0.1,"percentage":100}])");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ModelJoinOptions o;
  o.model_path = Model();
  auto sum = JoinModel(&*p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_EQ(sum->nodes_matched, 5u);  // two Unsqueeze, Mul, Transpose, Reshape
  double total = 0;
  for (const auto& op : p->ops) total += op.runs_ms[0];
  EXPECT_NEAR(total, 0.1, 1e-12);  // the split keeps the layer's time
}

TEST(ModelJoin, ModelThatMatchesNothingIsAnError) {
  auto p = ImportFile(Data("ort_2019.json"));
  ASSERT_TRUE(p.ok());
  ModelJoinOptions o;
  o.model_path = Model();
  auto sum = JoinModel(&*p, o);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().message().find("is this the model"), std::string::npos);
}

TEST(Devices, TableHasSourcesAndSaneNumbers) {
  for (const auto& d : DeviceTable()) {
    EXPECT_GT(d.peak_gflops, 10) << d.name;
    EXPECT_GT(d.peak_gbps, 1) << d.name;
    EXPECT_GT(std::string(d.source).size(), 20u) << d.name;
  }
  EXPECT_NE(FindDevice("orin-agx"), nullptr);
  EXPECT_EQ(FindDevice("nope"), nullptr);
}

// --- fuzz entry ---

TEST(ImportFuzz, FixturesTruncationsAndBitFlips) {
  struct Seed {
    const char* file;
    const char* format;
  };
  const Seed seeds[] = {{"ort_2019.json", "ort"},
                        {"ort_bev_all.json", "ort"},
                        {"trt8_bev.json", "tensorrt"},
                        {"trt7_bev.json", "tensorrt"},
                        {"perf_script_threads.txt", "perf-script"},
                        {"perf_script_python.txt", "perf-script"},
                        {"nsys_small.sqlite", "nsys"},
                        {"nsys_memory.sqlite", "nsys"},
                        {"pytorch_gpu.json", "pytorch"},
                        {"pytorch_legacy_cpu.json", "pytorch"},
                        {"tflite_v1.txt", "tflite"},
                        {"tflite_v2.txt", "tflite"},
                        {"armnn_cpuacc.json", "armnn"},
                        {"armnn_executenetwork_gpuacc.log", "armnn"},
                        {"nvprof_summary.csv", "nvprof"},
                        {"nvprof_trace.csv", "nvprof"},
                        {"real/trt10_trtexec_windows.json", "tensorrt"},
                        {"real/trt7_googlenet_layout.json", "tensorrt"},
                        {"real/nsys_stats_2024_default.csv", "nsys-stats"},
                        {"real/nsys_stats_2021_gpukernsum_windows.csv", "nsys-stats"},
                        {"real/nsys_stats_api_and_gpu_trace.csv", "nsys-stats"},
                        {"real/nvprof_gpu_and_api_trace.csv", "nvprof"},
                        {"real/nvprof_summary_unified_memory.csv", "nvprof"},
                        {"real/tflite_2x_subgraphs_delegate_internal.txt", "tflite"},
                        {"real/tflite_csv_mode.txt", "tflite"},
                        {"real/tflite_pasted_spaces_xnnpack_ops.txt", "tflite"},
                        {"real/tflite_nnapi_unnamed_outputs.txt", "tflite"},
                        {"real/trt8_tensor_copies.json", "tensorrt"},
                        {"real/nvprof_text_summary.txt", "nvprof"},
                        {"real/nsys_2024_schema.sqlite", "nsys"},
                        {"real/perf_script_padded_comm_side_band.txt", "perf-script"},
                        {"real/perf_script_fields_pid_tid_ns.txt", "perf-script"},
                        {"real/armnn_1902_no_ids.json", "armnn"},
                        {"real/armnn_2102_start_stop.json", "armnn"},
                        {"real/ort_threadpool_stats.json", "ort"},
                        {"real/pytorch_2x_kineto.json", "pytorch"}};
  for (const Seed& s : seeds) {
    std::string b = ReadFile(Data(s.file)).value();
    auto run = [&](const std::string& x) {
      FuzzImport(s.format, reinterpret_cast<const uint8_t*>(x.data()), x.size());
    };
    run(b);
    const size_t step = b.size() > 4096 ? b.size() / 256 : 1;
    for (size_t n = 0; n < b.size(); n += step) run(b.substr(0, n));
    for (size_t i = 0; i < b.size(); i += step)
      for (int bit = 0; bit < 8; ++bit) {
        std::string f = b;
        f[i] = static_cast<char>(f[i] ^ (1 << bit));
        run(f);
      }
  }
}

TEST(ImportFuzz, RegressionCorpora) {
  // Every registered format (formats.def) has a corpus.
  for (const Format* f : AllFormats()) {
    std::string format = f->name;
    std::string name = format;
    for (char& ch : name)
      if (ch == '-') ch = '_';
    int n =
        opscope::testing::ReplayFuzzCorpus("import_" + name + "_fuzz", [&](const std::string& b) {
          FuzzImport(format.c_str(), reinterpret_cast<const uint8_t*>(b.data()), b.size());
        });
    EXPECT_GT(n, 0) << "tests/fuzz_corpus/import_" << name << "_fuzz is empty";
  }
}

}  // namespace
}  // namespace opscope::importers
