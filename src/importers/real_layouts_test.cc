// The layouts the tools really write, as found in their sources and in files people published
// (docs/importers.md "Real layouts" names each source): one fixture per layout under
// testdata/real/, each imported here and its numbers checked.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "base/files.h"
#include "importers/importer.h"
#include "importers/model_join.h"
#include "importers/tensorrt/layer_info.h"
#include "importers/tensorrt/layer_names.h"
#include "profile/profile_io.h"

namespace opscope::importers {
namespace {

std::string Real(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/importers/testdata/real/" + name;
}

profile::Profile MustImport(const std::string& file, const char* expect_format) {
  auto head = ReadFile(Real(file));
  EXPECT_TRUE(head.ok()) << file;
  auto fmt = Detect(head.value().substr(0, kSniffBytes), file);
  EXPECT_TRUE(fmt.ok()) << file << ": " << fmt.status().message();
  if (fmt.ok()) {
    EXPECT_STREQ(fmt.value()->name, expect_format) << file;
  }
  auto p = ImportFile(Real(file));
  EXPECT_TRUE(p.ok()) << file << ": " << p.status().message();
  return p.ok() ? std::move(p).value() : profile::Profile{};
}

const profile::OpRecord* Op(const profile::Profile& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return &op;
  return nullptr;
}

bool HasDegradation(const profile::Profile& p, std::string_view part) {
  for (const auto& d : p.meta.degradations)
    if (d.find(part) != std::string::npos) return true;
  return false;
}

// --- TensorRT ---

TEST(RealTensorRt, TrtexecWritesNamesUnescapedAndCrlfOnWindows) {
  profile::Profile p = MustImport("trt10_trtexec_windows.json", "tensorrt");
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.meta.runs, 50);
  EXPECT_EQ(p.ops[0].name, "/backbone/conv1/Conv + /backbone/act1/Relu");
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 0.21);
  EXPECT_EQ(p.ops[2].name, "/head/Reshape \"bev\"\x1f[profile 0]");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 0.05);
  EXPECT_EQ(p.ops[3].op_type, "Reformat");
  EXPECT_DOUBLE_EQ(p.ops[3].runs_ms[0], 0.14);  // "1.4e-01"
  EXPECT_EQ(p.meta.extra["trt.layout"], "TensorRT 8+ (medianMs)");
  EXPECT_TRUE(HasDegradation(p, "not valid JSON"));
}

StatusOr<profile::Profile> FromBytes(std::string_view text, const char* format) {
  auto src = Source::FromBytes(text, "t.json");
  return Import(*src, FindFormat(format));
}

TEST(RealTensorRt, NanPercentagesOfAnAllZeroProfileAndCutFiles) {
  // Every layer at 0 ms: trtexec divides by a zero total and writes "nan" (or "-nan").
  auto p = FromBytes(
      "[\n  { \"count\" : 5 }\n, { \"name\" : \"a\", \"timeMs\" : 0, \"averageMs\" : 0, "
      "\"medianMs\" : 0, \"percentage\" : -nan }\n]\n",
      "tensorrt");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->ops[0].runs_ms[0], 0.0);
  EXPECT_TRUE(HasDegradation(*p, "NaN"));
  // The same layout cut before its closing bracket, and a NaN average, are errors.
  auto cut = FromBytes(
      "[\n  { \"count\" : 5 }\n, { \"name\" : \"a \"q\"\", \"timeMs\" : 1, \"averageMs\" : 0.2, "
      "\"percentage\" : 100 }\n",
      "tensorrt");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos) << cut.status().message();
  auto nan = FromBytes(
      "[\n  { \"count\" : 5 }\n, { \"name\" : \"a\", \"timeMs\" : 1, \"averageMs\" : nan, "
      "\"percentage\" : 100 }\n]\n",
      "tensorrt");
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("averageMs"), std::string::npos) << nan.status().message();
}

TEST(RealTensorRt, Trt7ReformattersAndParallelLayers) {
  profile::Profile p = MustImport("trt7_googlenet_layout.json", "tensorrt");
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.meta.runs, 1000);
  EXPECT_EQ(p.meta.extra["trt.layout"], "TensorRT 7 (no medianMs)");
  EXPECT_EQ(p.ops[0].op_type, "Reformat");
  EXPECT_EQ(p.ops[3].op_type, "Reformat");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 0.06);
  using K = trt::LayerName::Kind;
  auto r = trt::ParseLayerName("conv1/7x7_s2 + conv1/relu_7x7 input reformatter 0");
  EXPECT_EQ(r.kind, K::kReformat);
  EXPECT_EQ(r.reformat_target, "conv1/7x7_s2 + conv1/relu_7x7");
  auto par = trt::ParseLayerName(
      "inception_3a/1x1 + inception_3a/relu_1x1 || inception_3a/3x3_reduce + "
      "inception_3a/relu_3x3_reduce");
  EXPECT_EQ(par.kind, K::kFused);
  EXPECT_EQ(par.parts,
            (std::vector<std::string>{"inception_3a/1x1", "inception_3a/relu_1x1",
                                      "inception_3a/3x3_reduce", "inception_3a/relu_3x3_reduce"}));
}

TEST(RealTensorRt, Trt10LayerInfoRecordSeparatorsAndAuxStreams) {
  EXPECT_EQ(trt::ParseOnnxMetadata("[ONNX Layer: /a/Conv]\x1e[ONNX Layer: /a/Relu]"),
            (std::vector<std::string>{"/a/Conv", "/a/Relu"}));
  EXPECT_EQ(trt::ParseOnnxMetadata("[ONNX Layer: q [x]/Mul] [ONNX Layer: /b/Add]"),
            (std::vector<std::string>{"q [x]/Mul", "/b/Add"}));
  auto info = trt::ParseLayerInfo(ReadFile(Real("trt10_layers.json")).value(), "layers.json");
  ASSERT_TRUE(info.ok()) << info.status().message();
  ASSERT_EQ(info->layers.size(), 5u);
  EXPECT_EQ(info->layers[1].onnx_nodes, (std::vector<std::string>{"/lift/Mul", "/lift/Add"}));
  profile::Profile p = MustImport("trt10_trtexec_windows.json", "tensorrt");
  ASSERT_TRUE(trt::ApplyLayerInfo(*info, &p).ok());
  EXPECT_EQ(p.ops[0].op_type, "CaskConvolution");
  // A dynamic dimension (-1) is not a size: it reads as 0, and "N/A" formats stay as written.
  EXPECT_EQ(p.ops[0].input_shapes[0], (std::vector<int64_t>{0, 3, 64, 176}));
  EXPECT_EQ(p.ops[2].op_type, "NoOp");  // matched through the quote and the \x1f in its name
}

// --- Nsight Systems `nsys stats` ---

TEST(RealNsysStats, DefaultReportsReadOnlyTheGpuTables) {
  profile::Profile p = MustImport("nsys_stats_2024_default.csv", "nsys-stats");
  // cuda_api_sum, osrt_sum and nvtx_sum are host/NVTX tables, not GPU rows.
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(Op(p, "cudaMalloc"), nullptr);
  EXPECT_EQ(Op(p, "poll"), nullptr);
  EXPECT_EQ(p.ops[0].op_type, "kernel");
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 6.0);
  EXPECT_NE(p.ops[1].name.find("launch_clamp_scalar"), std::string::npos);
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 2.0);
  ASSERT_NE(Op(p, "[CUDA memcpy Host-to-Device]"), nullptr);
  EXPECT_DOUBLE_EQ(Op(p, "[CUDA memcpy Host-to-Device]")->runs_ms[0], 1.6);
  EXPECT_EQ(Op(p, "[CUDA memset]")->op_type, "memset");
  EXPECT_TRUE(HasDegradation(p, "cuda_api_sum (2 rows)"));
  EXPECT_TRUE(HasDegradation(p, "osrt_sum (2 rows)"));
}

TEST(RealNsysStats, Old2021SpellingsBomCrlfQuotesAndSeparators) {
  profile::Profile p = MustImport("nsys_stats_2021_gpukernsum_windows.csv", "nsys-stats");
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(p.ops[0].name, "conv_kernel<\"fp16\">(half*, int)");
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 7.0);  // "7,000,000" ns
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 3.0);
  EXPECT_EQ(p.ops[2].op_type, "memcpy");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 0.5);
}

TEST(RealNsysStats, ApiTraceGoesToApiCallsNotKernels) {
  profile::Profile p = MustImport("nsys_stats_api_and_gpu_trace.csv", "nsys-stats");
  ASSERT_TRUE(p.gpu.has_value());
  ASSERT_EQ(p.gpu->kernels.size(), 1u);
  EXPECT_EQ(p.gpu->kernels[0].name, "conv_kernel(float const*, float*)");
  EXPECT_EQ(p.gpu->kernels[0].stream, 7);  // "Strm" after the 2024 "GreenCtx" column
  EXPECT_EQ(p.gpu->kernels[0].end_ns - p.gpu->kernels[0].start_ns, 60000);
  ASSERT_EQ(p.gpu->memcpys.size(), 1u);
  EXPECT_EQ(p.gpu->memcpys[0].kind, "HtoD");
  EXPECT_EQ(p.gpu->memcpys[0].bytes, 4194000);
  ASSERT_EQ(p.gpu->api_calls.size(), 2u);
  EXPECT_EQ(p.gpu->api_calls[1].name, "cudaLaunchKernel");
  EXPECT_EQ(p.gpu->api_calls[1].correlation_id, 11u);
  EXPECT_EQ(p.gpu->api_calls[1].tid, 4242);
}

TEST(RealNsysStats, OnlyHostTablesIsOneClearError) {
  auto p = FromBytes(
      "\"Time (%)\",\"Total Time (ns)\",\"Num Calls\",\"Avg (ns)\",\"Name\"\n"
      "\"100.0\",\"900\",\"3\",\"300.0\",\"cudaMalloc\"\n",
      "nsys-stats");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("only host/NVTX tables"), std::string::npos)
      << p.status().message();
}

// --- Nsight Systems SQLite ---

// The column set of the 2024-2026 exports (testdata/real/make_nsys_2024_schema.py): driver
// calls share CUPTI_ACTIVITY_KIND_RUNTIME with runtime calls, NVTX domains are named by their
// eventType 75 (domain create) events, per process.
TEST(RealNsys, Schema2024DriverCallsAndNamedDomains) {
  profile::Profile p = MustImport("nsys_2024_schema.sqlite", "nsys");
  ASSERT_TRUE(p.gpu.has_value());
  EXPECT_EQ(p.gpu->device_name, "NVIDIA Jetson AGX Orin");
  ASSERT_EQ(p.gpu->api_calls.size(), 3u);
  EXPECT_EQ(p.gpu->api_calls[0].name, "cuLaunchKernel");
  EXPECT_EQ(p.gpu->api_calls[0].api, "driver");
  EXPECT_EQ(p.gpu->api_calls[2].name, "cudaMemcpyAsync");
  EXPECT_EQ(p.gpu->api_calls[2].api, "runtime");
  ASSERT_EQ(p.ranges.size(), 3u);  // the domain-create event is not a range
  EXPECT_EQ(p.ranges[0].name, "frame 0");
  EXPECT_EQ(p.ranges[0].domain, "default");
  EXPECT_EQ(p.ranges[1].name, "enqueue");
  EXPECT_EQ(p.ranges[1].domain, "TensorRT");
  EXPECT_EQ(p.ranges[2].name, "layer bev_pool");
  EXPECT_EQ(p.ranges[2].depth, 2);
  ASSERT_EQ(p.gpu->kernels.size(), 2u);
  EXPECT_EQ(p.gpu->kernels[0].range, 2);  // launched inside "layer bev_pool"
  EXPECT_EQ(p.gpu->kernels[0].tid, 7010);
  EXPECT_EQ(p.gpu->kernels[0].dynamic_shared_bytes, 8192);
  EXPECT_EQ(p.gpu->kernels[1].range, 1);
  ASSERT_EQ(p.gpu->memcpys.size(), 1u);
  EXPECT_EQ(p.gpu->memcpys[0].kind, "DtoH");
  EXPECT_EQ(p.gpu->memcpys[0].bytes, 2097152);
  EXPECT_FALSE(p.gpu->memcpys[0].pageable);  // dstKind 2: pinned
  EXPECT_TRUE(p.gpu->memcpys[0].async);
}

// --- perf script ---

// Without call graphs perf pads the command name to 16 columns ("%16s"), so sample lines start
// with spaces; --show-mmap-events adds side-band lines between them.
TEST(RealPerfScript, PaddedCommandNamesAndSideBandRecords) {
  profile::Profile p = MustImport("perf_script_padded_comm_side_band.txt", "perf-script");
  ASSERT_TRUE(p.samples.has_value());
  const auto& s = *p.samples;
  ASSERT_EQ(s.samples.size(), 3u);  // the PERF_RECORD_MMAP2 line is not a sample
  EXPECT_EQ(s.samples[0].tid, 4100);
  EXPECT_EQ(s.thread_names.at(4100), "worker");
  EXPECT_EQ(s.thread_names.at(4101), "bev-preprocess-0");
  ASSERT_EQ(s.samples[0].stack.size(), 1u);
  EXPECT_EQ(s.frames[s.samples[0].stack[0]].function, "conv2d_nchw(float const*, float*, int)");
  EXPECT_EQ(s.frames[s.samples[0].stack[0]].module, "infer");
  EXPECT_EQ(s.frames[s.samples[2].stack[0]].function, "[unknown]");
  EXPECT_EQ(s.event, "cpu-clock");
  bool noted = false;
  for (const auto& w : s.warnings) noted = noted || w.find("1 side-band records") == 0;
  EXPECT_TRUE(noted);
}

// `perf script -F pid,tid,time,event,ip,sym,dso`: no command name, nanosecond timestamps.
TEST(RealPerfScript, FieldsWithoutCommandName) {
  profile::Profile p = MustImport("perf_script_fields_pid_tid_ns.txt", "perf-script");
  ASSERT_TRUE(p.samples.has_value());
  const auto& s = *p.samples;
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_EQ(s.samples[0].pid, 4200);
  EXPECT_EQ(s.samples[0].tid, 4201);
  EXPECT_EQ(s.samples[1].time_ns - s.samples[0].time_ns, 500000);
  ASSERT_EQ(s.samples[0].stack.size(), 3u);
  EXPECT_EQ(s.frames[s.samples[0].stack[2]].function, "main");
  EXPECT_EQ(s.event, "cycles");
}

// --- nvprof ---

TEST(RealNvprof, GpuTraceThenApiTraceWithWarnings) {
  profile::Profile p = MustImport("nvprof_gpu_and_api_trace.csv", "nvprof");
  ASSERT_TRUE(p.gpu.has_value());
  ASSERT_EQ(p.gpu->kernels.size(), 1u);  // cudaLaunchKernel & co. are not kernels
  EXPECT_EQ(p.gpu->kernels[0].name, "void gemm_kernel<float, int=128>(float const *, float*)");
  EXPECT_EQ(p.gpu->kernels[0].end_ns - p.gpu->kernels[0].start_ns, 120000);
  EXPECT_EQ(p.gpu->kernels[0].dynamic_shared_bytes, 4096);  // KB units row
  ASSERT_EQ(p.gpu->memsets.size(), 1u);
  EXPECT_EQ(p.gpu->memsets[0].bytes, 1028);  // 1.003906 KB
  ASSERT_EQ(p.gpu->memcpys.size(), 1u);
  EXPECT_EQ(p.gpu->memcpys[0].bytes, 128);
  ASSERT_EQ(p.gpu->api_calls.size(), 3u);
  EXPECT_EQ(p.gpu->api_calls[2].name, "cudaLaunchKernel");
  EXPECT_EQ(p.gpu->api_calls[2].correlation_id, 318u);
}

TEST(RealNvprof, SummaryFollowedByUnifiedMemoryTable) {
  profile::Profile p = MustImport("nvprof_summary_unified_memory.csv", "nvprof");
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 8.0);
  EXPECT_EQ(p.ops[1].op_type, "memcpy");
}

// Published trtexec profiles (TensorRT 8.x) hold "<tensor> copy" layers: copies TensorRT
// inserted (Concat inputs it could not write in place), named after the tensor.
TEST(RealTensorRt, TensorCopyLayersAreInsertedByTensorRt) {
  profile::Profile p = MustImport("trt8_tensor_copies.json", "tensorrt");
  ASSERT_EQ(p.ops.size(), 5u);
  EXPECT_EQ(trt::ParseLayerName("417 copy").kind, trt::LayerName::Kind::kCopy);
  EXPECT_EQ(trt::ParseLayerName("backbone.conv1.relu copy").reformat_target, "backbone.conv1.relu");
  EXPECT_EQ(trt::ParseLayerName("a + b copy").kind, trt::LayerName::Kind::kFused);
  EXPECT_EQ(p.ops[1].op_type, "Copy");
  EXPECT_EQ(p.ops[2].op_type, "Copy");
  EXPECT_TRUE(p.ops[1].source_nodes.empty());
  ModelJoinOptions o;
  o.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx";
  o.runtime = "TensorRT";
  auto sum = JoinModel(&p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_TRUE(sum->unmatched.empty()) << sum->unmatched[0].first;  // before: both copies
  // A copy is charged to the node of its neighbouring layer, which says so.
  EXPECT_EQ(Op(p, "417 copy"), nullptr);
  const profile::OpRecord* served = nullptr;
  for (const auto& op : p.ops)
    if (op.attribution.find("plus '417 copy' (Copy, ") != std::string::npos) served = &op;
  ASSERT_NE(served, nullptr);
  EXPECT_NE(served->attribution.find("inserted by TensorRT for it"), std::string::npos)
      << served->attribution;
  EXPECT_DOUBLE_EQ(sum->matched_share, 1.0);
}

// --- nvprof ---

// nvprof without --csv: the text summary people paste, every time with its unit, rows under a
// Type until the next one, names with spaces.
TEST(RealNvprof, TextSummaryWithUnitsAndTypes) {
  profile::Profile p = MustImport("nvprof_text_summary.txt", "nvprof");
  ASSERT_EQ(p.ops.size(), 5u);  // GPU activities only
  EXPECT_EQ(p.ops[0].name, "void im2col_kernel<float>(int, float const *, int, float*)");
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 1500.0);
  EXPECT_EQ(p.ops[1].op_type, "kernel");
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 900.0);
  EXPECT_EQ(p.ops[2].op_type, "memcpy");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 450.0);
  EXPECT_EQ(p.ops[3].op_type, "memset");
  EXPECT_DOUBLE_EQ(p.ops[4].runs_ms[0], 0.3);
  EXPECT_TRUE(HasDegradation(p, "API calls (2 rows)"));
  // Releases without the Type column: every row is a GPU activity.
  auto old = FromBytes(
      "==7== Profiling result:\n"
      "Time(%)      Time     Calls       Avg       Min       Max  Name\n"
      " 80.00%  8.0000ms         2  4.0000ms  3.0000ms  5.0000ms  sgemm_kernel\n"
      " 20.00%  2.0000ms         4  500.00us  400.00us  600.00us  [CUDA memcpy DtoH]\n"
      "\n"
      "==7== API calls:\n"
      "Time(%)      Time     Calls       Avg       Min       Max  Name\n"
      " 90.00%  90.000ms         3  30.000ms  5.0000us  89.000ms  cudaMalloc\n",
      "nvprof");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->ops.size(), 2u);  // cudaMalloc is in the API calls table
  EXPECT_DOUBLE_EQ(old->ops[0].runs_ms[0], 8.0);
  EXPECT_DOUBLE_EQ(old->ops[1].runs_ms[0], 2.0);
  EXPECT_TRUE(HasDegradation(*old, "API calls (1 rows)"));
  auto cut = FromBytes(
      "==7== Profiling result:\n"
      "Time(%)      Time     Calls       Avg       Min       Max  Name\n"
      " 80.00%  8.0000ms         2  4.00\n",
      "nvprof");
  EXPECT_FALSE(cut.ok());
}

// --- TFLite ---

TEST(RealTflite, CurrentLayoutWithSubgraphsAndDelegateInternals) {
  profile::Profile p = MustImport("tflite_2x_subgraphs_delegate_internal.txt", "tflite");
  ASSERT_EQ(p.ops.size(), 3u);  // the primary graph only
  EXPECT_EQ(p.ops[0].name, "sequential/conv2d/Relu;sequential/conv2d/BiasAdd");
  EXPECT_EQ(p.ops[1].name, "sequential/dense/MatMul, Identity");
  EXPECT_EQ(p.ops[1].op_type, "TfLiteXNNPackDelegate");
  EXPECT_DOUBLE_EQ(p.ops[0].runs_ms[0], 0.501);
  EXPECT_EQ(p.meta.runs, 20);  // the primary graph's Timings, not the delegate's
  ASSERT_EQ(p.e2e.runs_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(p.e2e.runs_ms[0], 1.0005);
  EXPECT_TRUE(HasDegradation(p, "Subgraph (index: 1, name: while_body) profile"));
  EXPECT_TRUE(HasDegradation(p, "Delegate internal"));
}

TEST(RealTflite, CsvOutputMode) {
  profile::Profile p = MustImport("tflite_csv_mode.txt", "tflite");
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(p.ops[1].name, "sequential/dense/MatMul, Identity");  // its comma was a tab
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 0.399);
  EXPECT_EQ(p.ops[2].op_type, "WHILE");
  EXPECT_EQ(p.meta.runs, 20);
}

TEST(RealTflite, DelegateInternalTableAloneReadsNodeTypesWithSpaces) {
  std::string t =
      "============================== Run Order ==============================\n"
      "\t             [node type]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t[times "
      "called]\t[Name]\n"
      "\tFully Connected (NC, F32) GEMM\t    0.390\t    0.380\t100.000%\t100.000%\t     0.000\t"
      "        1\tDelegate/Fully Connected (NC, F32) GEMM:0\n\n";
  auto p = FromBytes(t, "tflite");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), 1u);
  EXPECT_EQ(p->ops[0].op_type, "Fully Connected (NC, F32) GEMM");
  EXPECT_DOUBLE_EQ(p->ops[0].runs_ms[0], 0.38);
}

// A log pasted from a terminal or a web page has no tabs left: columns are runs of spaces, and
// XNNPACK's operator rows have spaces in their node types and names. [avg ms] is per call:
// a row called 4 times a run takes 4 x avg.
TEST(RealTflite, PastedWithoutTabsXnnpackOperatorRows) {
  profile::Profile p = MustImport("tflite_pasted_spaces_xnnpack_ops.txt", "tflite");
  ASSERT_EQ(p.ops.size(), 7u);  // the regular runs only, not the initialization table
  EXPECT_EQ(p.ops[0].name, "images");
  EXPECT_EQ(p.ops[1].op_type, "Convolution (NHWC, F32) IGEMM");
  EXPECT_EQ(p.ops[1].name, "Delegate/Convolution (NHWC, F32) IGEMM:0");
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 1.0);
  EXPECT_EQ(p.ops[2].name, "Delegate/Convolution (NHWC, F32) DWConv:1");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 1.0);  // 0.25 ms x 4 calls: its 20%
  EXPECT_NE(p.ops[2].attribution.find("4 calls per run"), std::string::npos);
  // The same operator name in another delegate partition is another row.
  EXPECT_EQ(p.ops[5].name, "Delegate/Convolution (NHWC, F32) DWConv:1 #2");
  EXPECT_DOUBLE_EQ(p.ops[5].runs_ms[0], 0.2);
  EXPECT_EQ(p.ops[6].name, "boxes, classes, scores, count");
  double sum = 0;
  for (const auto& op : p.ops) sum += op.runs_ms[0];
  EXPECT_NEAR(sum, 5.0, 1e-9);  // the Timings average: every row's share adds up
  EXPECT_EQ(p.meta.runs, 30);
  ASSERT_EQ(p.e2e.runs_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(p.e2e.runs_ms[0], 5.0);
  // The same per-call reading in benchmark_model's own tab-separated layout.
  auto tabs = FromBytes(
      "============================== Run Order ==============================\n"
      "\t[node type]\t[first]\t[avg ms]\t[%]\t[cdf%]\t[mem KB]\t[times called]\t[Name]\n"
      "\tCONV_2D\t0.300\t0.250\t75.000%\t75.000%\t0.000\t3\t[body/conv]:4\n"
      "\tWHILE\t0.260\t0.250\t25.000%\t100.000%\t0.000\t1\t[loop]:0\n\n",
      "tflite");
  ASSERT_TRUE(tabs.ok()) << tabs.status().message();
  ASSERT_EQ(tabs->ops.size(), 2u);
  EXPECT_DOUBLE_EQ(tabs->ops[0].runs_ms[0], 0.75);
  EXPECT_DOUBLE_EQ(tabs->ops[1].runs_ms[0], 0.25);
}

// An NNAPI delegate's nodes have no named outputs: "[]:21". They are named by type and index.
TEST(RealTflite, NodesWithoutOutputNamesAreNamedByTypeAndIndex) {
  profile::Profile p = MustImport("tflite_nnapi_unnamed_outputs.txt", "tflite");
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(p.ops[0].name, "TfLiteNnapiDelegate:21");
  EXPECT_EQ(p.ops[1].name, "AVERAGE_POOL_2D:9");
  EXPECT_EQ(p.ops[2].name, "TfLiteNnapiDelegate:22");
  EXPECT_DOUBLE_EQ(p.ops[2].runs_ms[0], 1.5);
  EXPECT_EQ(p.meta.runs, 10);
}

// --- Arm NN ---

TEST(RealArmnn, Layout1902WithoutIdsDuplicateKeysAndBadBytes) {
  profile::Profile p = MustImport("armnn_1902_no_ids.json", "armnn");
  ASSERT_EQ(p.ops.size(), 4u);  // both convolutions, not one
  EXPECT_EQ(p.ops[1].op_type, "Convolution2d");
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 6.0);
  EXPECT_EQ(p.ops[3].name, "NeonConvolution2dWorkload #2");
  EXPECT_DOUBLE_EQ(p.ops[3].runs_ms[0], 2.0);
  ASSERT_EQ(p.e2e.runs_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(p.e2e.runs_ms[0], 9.0);
  EXPECT_TRUE(HasDegradation(p, "not UTF-8"));
}

TEST(RealArmnn, Layout2102StartStopTimestampsAreNotDurations) {
  profile::Profile p = MustImport("armnn_2102_start_stop.json", "armnn");
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_NEAR(p.ops[0].runs_ms[0], 9.041875, 1e-9);
  EXPECT_DOUBLE_EQ(p.ops[1].runs_ms[0], 0.3);
  ASSERT_EQ(p.e2e.runs_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(p.e2e.runs_ms[0], 9.5);
}

// --- PyTorch ---

// More GPU records than the 20 000 the importer used to keep: every kernel and runtime call is
// in the gpu section, the totals add up, and the profile saves and loads with all of them.
// Timestamps are epoch-sized µs (PyTorch 2.x), where end - start loses the µs fractions.
TEST(RealPytorch, AllGpuRecordsKeptBeyondTwentyThousand) {
  constexpr int kSteps = 5, kOpsPerStep = 5000;
  std::string t = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  double ts = 1.7e15;
  int64_t corr = 1;
  for (int s = 0; s < kSteps; ++s) {
    t += fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
        "\"pid\": 1, \"tid\": 1, \"ts\": {:.3f}, \"dur\": {:.3f}}},\n",
        s, ts, kOpsPerStep * 10.0 + 5);
    for (int i = 0; i < kOpsPerStep; ++i, ++corr) {
      const double at = ts + 1 + i * 10.0;
      t += fmt::format(
          "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::relu\", \"pid\": 1, "
          "\"tid\": 1, \"ts\": {:.3f}, \"dur\": 8, \"args\": {{\"External id\": {}}}}},\n"
          "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
          "\"pid\": 1, \"tid\": 1, \"ts\": {:.3f}, \"dur\": 3, \"args\": {{\"External id\": "
          "{}, \"correlation\": {}}}}},\n"
          "{{\"ph\": \"f\", \"id\": {}, \"pid\": 1, \"tid\": 1, \"ts\": {:.3f}, \"cat\": "
          "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}},\n"
          "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"relu_kernel\", \"pid\": 0, "
          "\"tid\": \"stream 7\", \"ts\": {:.3f}, \"dur\": 2.125, \"args\": "
          "{{\"correlation\": {}, \"stream\": 7, \"device\": 0}}}},\n",
          at, corr, at + 1, corr, corr, corr, at + 4, at + 4, corr);
    }
    ts += kOpsPerStep * 10.0 + 100;
  }
  t += "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"GPU "
       "0\"}}\n]}\n";
  auto p = FromBytes(t, "pytorch");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->gpu.has_value());
  EXPECT_EQ(p->gpu->kernels.size(), static_cast<size_t>(kSteps * kOpsPerStep));
  EXPECT_EQ(p->gpu->api_calls.size(), static_cast<size_t>(kSteps * kOpsPerStep));
  EXPECT_EQ(p->gpu->kernels.back().end_ns - p->gpu->kernels.back().start_ns, 2125);
  ASSERT_EQ(p->ops.size(), 1u);
  ASSERT_EQ(p->ops[0].runs_ms.size(), static_cast<size_t>(kSteps));
  for (double run : p->ops[0].runs_ms) EXPECT_NEAR(run, kOpsPerStep * 2.125e-3, 1e-9);
  for (const auto& d : p->meta.degradations)
    EXPECT_EQ(d.find("keeps the first"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/many_kernels.json";
  ASSERT_TRUE(profile::SaveProfile(*p, path).ok());
  auto back = profile::LoadProfile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->gpu.has_value());
  EXPECT_EQ(back->gpu->kernels.size(), static_cast<size_t>(kSteps * kOpsPerStep));
}

TEST(RealPytorch, Kineto2xLayout) {
  profile::Profile p = MustImport("pytorch_2x_kineto.json", "pytorch");
  EXPECT_EQ(p.meta.runs, 1);
  ASSERT_EQ(p.ops.size(), 3u);
  const profile::OpRecord* conv = nullptr;
  for (const auto& op : p.ops)
    if (op.op_type == "aten::conv2d") conv = &op;
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->input_shapes[1], (std::vector<int64_t>{64, 3, 7, 7}));
  EXPECT_NEAR(conv->runs_ms[0], 0.12325, 1e-12);  // its kernel, launched by cuLaunchKernel
  ASSERT_TRUE(p.gpu.has_value());
  ASSERT_EQ(p.gpu->kernels.size(), 1u);
  EXPECT_EQ(p.gpu->kernels[0].stream, 7);  // "tid": "stream 7"
  EXPECT_EQ(p.gpu->kernels[0].grid[0], 196);
  EXPECT_EQ(p.gpu->kernels[0].registers_per_thread, 168);
  EXPECT_EQ(p.gpu->kernels[0].end_ns - p.gpu->kernels[0].start_ns, 123250);
  ASSERT_EQ(p.gpu->memcpys.size(), 1u);
  EXPECT_EQ(p.gpu->memcpys[0].kind, "DtoH");
  EXPECT_EQ(p.gpu->memcpys[0].bytes, 4000);
  EXPECT_FALSE(p.gpu->memcpys[0].pageable);
  ASSERT_EQ(p.gpu->memsets.size(), 1u);
  EXPECT_EQ(p.gpu->memsets[0].bytes, 256);
  ASSERT_EQ(p.gpu->api_calls.size(), 3u);
  EXPECT_EQ(p.gpu->api_calls[0].api, "driver");
  EXPECT_EQ(p.meta.extra["pytorch.gpu_linked"], "3 of 3 GPU records");
}

// --- ONNX Runtime ---

TEST(RealOrt, ThreadPoolStatsAreObjectsAndBecomePerNodeCounters) {
  profile::Profile p = MustImport("ort_threadpool_stats.json", "ort");
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_EQ(p.meta.runs, 2);
  const profile::OpRecord& conv = p.ops[0];
  ASSERT_EQ(conv.name, "conv");
  EXPECT_DOUBLE_EQ(conv.runs_ms[0], 0.4);
  // Run 1: 2 loops, the caller + 2 sub-threads ran (num_run 0->2, 0->1); run 2: 3 loops, the
  // caller + 3 sub-threads (2->4, 1->2, 0->1). Counters are per run.
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.parallel_loops"), 2.5);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.threads_used"), 3.5);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.threads_used_max"), 4);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.sub_thread_runs"), 3.5);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.block_size_max"), 4);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.distribution_us"), 11);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.main_run_us"), 295);
  EXPECT_DOUBLE_EQ(conv.counters.at("ort.wait_us"), 55.5);
  const profile::OpRecord& relu = p.ops[1];
  EXPECT_DOUBLE_EQ(relu.counters.at("ort.parallel_loops"), 0.5);
  EXPECT_DOUBLE_EQ(relu.counters.at("ort.threads_used"), 1);  // none in run 1, 2 in run 2
  EXPECT_DOUBLE_EQ(relu.counters.at("ort.sub_thread_runs"), 0.5);
  EXPECT_EQ(p.meta.extra["ort.parallel_nodes"], "2");
  EXPECT_EQ(p.meta.extra["ort.thread_stats"],
            "4 node events with thread-pool statistics (session-1-intra-op:4)");
}

}  // namespace
}  // namespace opscope::importers
