// Runs ONNX's own conformance data (Debian package libonnx-testdata) through the engine: every
// node test whose operators the engine supports, inputs from input_N.pb, outputs compared with
// output_N.pb within the tolerances ONNX's backend test runner uses (rtol 1e-3, atol 1e-7).
//
// Prints a per-operator table and the totals, writes them to
// ${OPSCOPE_BINARY_DIR}/conformance.txt, and fails listing every failing test that is not in
// testdata/conformance_known_failures.txt (each entry there carries its reason).
// OPSCOPE_CONFORMANCE_FILTER=substr restricts the run to test names containing substr.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/files.h"
#include "base/strings.h"
#include "engine/kernel.h"
#include "engine/onnx_io.h"
#include "opscope/engine.h"

namespace opscope::engine {
namespace {

namespace fs = std::filesystem;
constexpr const char* kDataDir = "/usr/share/libonnx-testdata/data/node";

struct Outcome {
  enum Kind { kPass, kFail, kSkip } kind;
  std::string detail;
};

bool Close(double a, double e, double rtol, double atol) {
  if (std::isnan(a) && std::isnan(e)) return true;
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[i];
    case DataType::kFloat64:
      return t.data<double>()[i];
    case DataType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kInt32:
      return t.data<int32_t>()[i];
    case DataType::kBool:
    case DataType::kUint8:
      return t.data<uint8_t>()[i];
    case DataType::kInt8:
      return t.data<int8_t>()[i];
    case DataType::kFloat16:
      return t.data<uint16_t>()[i];
  }
  return 0;
}

std::string Compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + DataTypeName(got.dtype()) + ", expected " +
           DataTypeName(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + ShapeToString(got.shape()) + ", expected " + ShapeToString(want.shape());
  bool exact = got.dtype() != DataType::kFloat32 && got.dtype() != DataType::kFloat64;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = At(got, i), e = At(want, i);
    if (exact ? a != e : !Close(a, e, 1e-3, 1e-7)) {
      std::ostringstream os;
      os << "element " << i << " = " << a << ", expected " << e;
      return os.str();
    }
  }
  return "";
}

Outcome RunOne(const fs::path& dir, std::set<std::string>* ops) {
  std::string model_path = (dir / "model.onnx").string();
  auto bytes = ReadFile(model_path);
  if (!bytes.ok()) return {Outcome::kSkip, bytes.status().message()};
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) return {Outcome::kSkip, "unparsable model"};
  // Every node, subgraphs (If branches, Loop/Scan bodies) included; a test is keyed by the
  // operators of its main graph.
  std::string missing;
  std::function<void(const onnx::GraphProto&, bool)> visit = [&](const onnx::GraphProto& g,
                                                                 bool top) {
    for (const auto& n : g.node()) {
      if (top) ops->insert(n.op_type());
      if (!FindKernel(n.domain(), n.op_type()) && missing.empty()) missing = n.op_type();
      for (const auto& a : n.attribute())
        if (a.has_g()) visit(a.g(), false);
    }
  };
  visit(model.graph(), true);
  if (!missing.empty()) return {Outcome::kSkip, "unsupported op " + missing};
  // Tests of types the engine does not run (strings, bfloat16, sequences, optionals) are skipped.
  auto runnable = [](const onnx::TypeProto& t) {
    return t.has_tensor_type() && FromOnnxType(t.tensor_type().elem_type()).ok();
  };
  for (const auto& v : model.graph().input())
    if (!runnable(v.type())) return {Outcome::kSkip, "input type not supported"};
  for (const auto& v : model.graph().output())
    if (!runnable(v.type())) return {Outcome::kSkip, "output type not supported"};
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> in_names, out_names;
  for (const auto& i : model.graph().input())
    if (!inits.count(i.name())) in_names.push_back(i.name());
  for (const auto& o : model.graph().output()) out_names.push_back(o.name());

  fs::path data = dir / "test_data_set_0";
  std::vector<Tensor> inputs;
  SessionOptions opts;
  opts.threads = 2;
  for (size_t i = 0; i < in_names.size(); ++i) {
    fs::path p = data / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) return {Outcome::kSkip, "missing " + p.string()};
    auto t = ReadTensorFile(p.string());
    if (!t.ok()) {
      if (t.status().code() == StatusCode::kUnsupported)
        return {Outcome::kSkip, t.status().message()};
      return {Outcome::kFail, t.status().message()};
    }
    opts.shapes[in_names[i]] = t->shape();
    inputs.push_back(std::move(t).value());
  }
  auto session = Session::Load(model_path, opts);
  if (!session.ok()) {
    const std::string m = session.status().message();
    if (session.status().code() == StatusCode::kUnsupported &&
        m.find("data type") != std::string::npos)
      return {Outcome::kSkip, m};
    return {Outcome::kFail, "load: " + m};
  }
  for (size_t i = 0; i < in_names.size(); ++i) {
    Status st = (*session)->SetInput(in_names[i], std::move(inputs[i]));
    if (!st.ok()) return {Outcome::kFail, "set input: " + st.message()};
  }
  // Twice: the first run is the planning run, the second uses the arena and folded steps.
  for (int run = 0; run < 2; ++run) {
    Status st = (*session)->Run();
    if (!st.ok()) return {Outcome::kFail, "run " + std::to_string(run) + ": " + st.message()};
    for (size_t o = 0; o < out_names.size(); ++o) {
      fs::path p = data / ("output_" + std::to_string(o) + ".pb");
      auto want = ReadTensorFile(p.string());
      if (!want.ok()) return {Outcome::kSkip, want.status().message()};
      const Tensor* got = (*session)->Output(out_names[o]);
      if (!got) return {Outcome::kFail, "no output " + out_names[o]};
      std::string diff = Compare(*got, *want);
      if (!diff.empty())
        return {Outcome::kFail,
                "run " + std::to_string(run) + " output '" + out_names[o] + "': " + diff};
    }
  }
  return {Outcome::kPass, ""};
}

std::map<std::string, std::string> KnownFailures() {
  std::map<std::string, std::string> known;
  std::ifstream in(std::string(OPSCOPE_SOURCE_DIR) +
                   "/src/engine/testdata/conformance_known_failures.txt");
  std::string line;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    known[line.substr(0, sp)] = sp == std::string::npos ? "" : Trim(line.substr(sp));
  }
  return known;
}

TEST(ConformanceTest, OnnxNodeTests) {
  if (!fs::is_directory(kDataDir))
    GTEST_SKIP() << kDataDir << " missing: apt-get install libonnx-testdata";
  const char* filter = std::getenv("OPSCOPE_CONFORMANCE_FILTER");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kDataDir))
    if (e.is_directory() &&
        (!filter || e.path().filename().string().find(filter) != std::string::npos))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  struct Tally {
    int pass = 0, fail = 0, skip = 0;
  };
  std::map<std::string, Tally> by_op;
  int pass = 0, fail = 0, known_fail = 0, skip = 0;
  std::vector<std::string> failures;
  auto known = KnownFailures();
  std::ostringstream detail;
  for (const auto& dir : dirs) {
    std::set<std::string> ops;
    Outcome o = RunOne(dir, &ops);
    std::string name = dir.filename().string();
    std::string key = ops.size() == 1 ? *ops.begin()
                                      : (name.find("_expanded") != std::string::npos
                                             ? "(expanded functions)"
                                             : Join({ops.begin(), ops.end()}, "+"));
    if (o.kind == Outcome::kSkip) {
      ++skip;
      if (o.detail.rfind("unsupported op", 0) != 0) by_op[key].skip++;
      continue;
    }
    if (o.kind == Outcome::kPass) {
      ++pass;
      by_op[key].pass++;
      if (known.count(name))
        detail << "NOTE " << name << " passes but is listed as a known failure\n";
    } else {
      by_op[key].fail++;
      if (known.count(name)) {
        ++known_fail;
        detail << "KNOWN " << name << ": " << o.detail << " (" << known[name] << ")\n";
      } else {
        ++fail;
        failures.push_back(name + ": " + o.detail);
        detail << "FAIL " << name << ": " << o.detail << "\n";
      }
    }
  }
  std::ostringstream report;
  report << "ONNX node conformance (libonnx-testdata " << kDataDir << ")\n";
  report << "operator                         pass  fail  skip\n";
  for (const auto& [op, t] : by_op) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%-32s %4d  %4d  %4d\n", op.c_str(), t.pass, t.fail, t.skip);
    report << buf;
  }
  report << "total: " << pass << " passed, " << fail << " failed, " << known_fail
         << " known failures, " << skip << " skipped (unsupported operators or data types) of "
         << dirs.size() << " node tests\n";
  report << detail.str();
  std::cout << report.str();
  std::ofstream(std::string(OPSCOPE_BINARY_DIR) + "/conformance.txt") << report.str();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failing node tests:\n"
                                << Join(failures, "\n");
  EXPECT_GT(pass, 0);
}

}  // namespace
}  // namespace opscope::engine
