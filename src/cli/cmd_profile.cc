// opscope profile MODEL.onnx: per-operator hotspots of a model on the built-in engine.
#include <cstdio>

#include "base/strings.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "collect/model_profiler.h"
#include "profile/profile.h"

namespace opscope::cli {
namespace {

class ProfileCommand : public Command {
 public:
  const char* Name() const override { return "profile"; }
  const char* Help() const override {
    return "Run a model on the built-in engine: per-operator hotspots, shapes, FLOPs, bytes, diagnosis";
  }
  void Setup(CLI::App* app) override {
    app->add_option("model", model_, "ONNX model file")->required();
    app->add_option("--threads", threads_, "Threads for the engine (default: all online CPUs)");
    app->add_option("--warmup", warmup_, "Warm-up runs, not measured")->capture_default_str();
    app->add_option("--runs", runs_, "Measured runs")->capture_default_str();
    app->add_option("-o,--output", out_.path, "Write the profile to FILE (format from the extension: .json, .csv, .trace.json, .txt)");
    app->add_option("--format", out_.format, "Write this format to standard output: table, json, csv, chrome");
    app->add_option("--top", top_, "Rows in the hotspot table")->capture_default_str();
    app->add_option("--input", inputs_, "Input from a TensorProto file: NAME=FILE.pb (repeatable)")->allow_extra_args(false);
    app->add_option("--shape", shapes_, "Shape for an input with symbolic dims: NAME=1x3x224x224 (repeatable)")->allow_extra_args(false);
    app->add_option("--save-outputs", save_dir_, "Write each output as a TensorProto .pb into DIR");
    app->add_option("--seed", seed_, "Seed for random inputs")->capture_default_str();
    app->add_flag("--no-fuse", no_fuse_, "Disable operator fusion (Conv+BN, Conv+activation, MatMul+Add)");
    app->add_flag("--no-overhead", no_overhead_, "Skip the interleaved runs that measure opscope's own overhead");
  }

  int Run() override {
    if (runs_ < 1) return ReportError(InvalidArgument("--runs must be at least 1 (got " + std::to_string(runs_) + ")"));
    if (warmup_ < 0) return ReportError(InvalidArgument("--warmup must not be negative (got " + std::to_string(warmup_) + ")"));
    if (threads_ < 0) return ReportError(InvalidArgument("--threads must not be negative (got " + std::to_string(threads_) + ")"));
    if (top_ < 1) return ReportError(InvalidArgument("--top must be at least 1"));
    Status st = PrepareOutput(out_, "table");
    if (!st.ok()) return ReportError(st);

    collect::ModelProfileOptions opt;
    opt.model_path = model_;
    opt.session.threads = threads_;
    opt.session.fuse = !no_fuse_;
    opt.warmup = warmup_;
    opt.runs = runs_;
    opt.seed = seed_;
    opt.save_outputs_dir = save_dir_;
    opt.measure_overhead = !no_overhead_;
    for (const std::string& s : shapes_) {
      auto eq = s.find('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || !ParseShape(s.substr(eq + 1), &dims))
        return ReportError(InvalidArgument("--shape '" + s + "': expected NAME=DxDxD (e.g. images=1x3x224x224)"));
      opt.session.shapes[s.substr(0, eq)] = dims;
    }
    for (const std::string& s : inputs_) {
      auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        return ReportError(InvalidArgument("--input '" + s + "': expected NAME=FILE.pb"));
      opt.input_files.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    ProgressBar bar("profiling");
    opt.progress = [&](int done, int total) { bar.Update(done, total); };
    auto p = collect::ProfileModel(opt);
    bar.Finish();
    if (!p.ok()) return ReportError(p.status());
    report::ReportOptions ro;
    ro.top = top_;
    ro.color = UseColor(1) && out_.format.empty();
    st = EmitProfile(*p, out_, ro);
    if (!st.ok()) return ReportError(st);
    return 0;
  }

 private:
  std::string model_;
  int threads_ = 0, warmup_ = 10, runs_ = 50, top_ = 15;
  uint64_t seed_ = 1;
  OutputChoice out_;
  std::vector<std::string> inputs_, shapes_;
  std::string save_dir_;
  bool no_fuse_ = false, no_overhead_ = false;
};

}  // namespace
OPSCOPE_REGISTER_COMMAND(ProfileCommand);
}  // namespace opscope::cli
