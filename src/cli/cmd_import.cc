// `opscope import FILE...`: other tools' profiles (ONNX Runtime, TensorRT, perf script, ...)
// into an ordinary opscope profile, optionally joined to the ONNX model (--model) and given
// the roofs of a board (--device, --peak-gflops/--peak-gbps). It writes through the output
// registry like every command (cli/output.h): the tables on standard output, `-o FILE` in the
// format its extension names, an unknown extension refused.
// `report` and `diff` read the same files directly (importers::LoadProfileFile).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/machine.h"
#include "base/files.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "importers/devices.h"
#include "importers/importer.h"
#include "importers/model_join.h"
#include "importers/tensorrt/layer_info.h"
#include "profile/profile_io.h"

namespace opscope::cli {
namespace {

const char* RuntimeName(const std::string& format) {
  if (format == "ort") return "ONNX Runtime";
  if (format == "tensorrt") return "TensorRT";
  if (format == "nsys") return "Nsight Systems";
  if (format == "tflite") return "TFLite";
  if (format == "armnn") return "Arm NN";
  if (format == "pytorch") return "PyTorch";
  return "the runtime";
}

// Appends B's runs to A's (several profile files of the same model and runtime).
void MergeRuns(profile::Profile* a, profile::Profile&& b, const std::string& origin) {
  std::map<std::string, size_t> idx;
  for (size_t i = 0; i < a->ops.size(); ++i) idx[a->ops[i].name] = i;
  size_t missing = 0;
  for (auto& op : b.ops) {
    auto it = idx.find(op.name);
    if (it == idx.end()) {
      ++missing;
      op.index = static_cast<int>(a->ops.size());
      a->ops.push_back(std::move(op));
      continue;
    }
    auto& runs = a->ops[it->second].runs_ms;
    runs.insert(runs.end(), op.runs_ms.begin(), op.runs_ms.end());
  }
  a->e2e.runs_ms.insert(a->e2e.runs_ms.end(), b.e2e.runs_ms.begin(), b.e2e.runs_ms.end());
  a->meta.runs += b.meta.runs;
  if (missing)
    a->meta.degradations.push_back(origin + " has " + std::to_string(missing) +
                                   " rows the first file lacks");
  if (b.samples) {
    if (!a->samples) a->samples.emplace();
    const uint32_t base = static_cast<uint32_t>(a->samples->frames.size());
    for (auto& f : b.samples->frames) a->samples->frames.push_back(std::move(f));
    for (auto& s : b.samples->samples) {
      for (auto& f : s.stack) f += base;
      a->samples->samples.push_back(std::move(s));
    }
  }
  if (a->meta.import) a->meta.import->files.push_back(origin);
}

class ImportCommand : public Command {
 public:
  const char* Name() const override { return "import"; }
  const char* Help() const override {
    return "read another tool's profile (ONNX Runtime, TensorRT, perf script, ...) into an "
           "opscope profile";
  }
  void Setup(CLI::App* app) override {
    app->add_option("files", files_, "profile file(s) of another tool (the format is detected)")
        ->required();
    app->add_option("--from", from_,
                    "the format, when detection cannot tell: " + importers::FormatNames());
    app->add_option("--model", model_,
                    "the ONNX model the profile was taken of: maps rows to "
                    "its nodes, with op types, shapes, FLOPs and bytes");
    app->add_option("--shape", shapes_,
                    "NAME=DIMS for a symbolic model input, e.g. "
                    "images=1x3x224x224 (repeatable)");
    app->add_option("--layer-info", layer_info_,
                    "TensorRT layer info (trtexec --exportLayerInfo) of the same engine");
    app->add_option("--device", device_,
                    "roofs from the published peaks of a board: " + importers::DeviceNames());
    app->add_option("--peak-gflops", peak_gflops_, "compute roof by hand, GFLOP/s")
        ->check(PositiveFinite());
    app->add_option("--peak-gbps", peak_gbps_, "memory-bandwidth roof by hand, GB/s")
        ->check(PositiveFinite());
    AddOutputOptions(app, &out_,
                     "e.g. .json (the profile), .txt, .csv, .trace.json, .html, .folded, .svg, "
                     ".pb.gz");
    app->add_option("--top", top_, "op rows in the tables (default 25, 0 = all)")
        ->check(WholeNumberIn(0, 1000000000));
    app->add_flag("--wide", wide_, "show long names whole");
  }

  CommandStatus Run() override {
    const importers::Format* format = nullptr;
    if (!from_.empty()) {
      format = importers::FindFormat(from_);
      if (!format)
        return InvalidArgument("--from '" + from_ +
                               "': unknown format; known: " + importers::FormatNames());
    }
    if (!device_.empty() && (peak_gflops_ > 0 || peak_gbps_ > 0))
      return InvalidArgument(
          "--device and --peak-gflops/--peak-gbps both give the "
          "roofs: use one of them");
    if ((peak_gflops_ > 0) != (peak_gbps_ > 0))
      return InvalidArgument(
          "--peak-gflops and --peak-gbps go together (a roofline "
          "needs both roofs)");
    const importers::DevicePeak* device = nullptr;
    if (!device_.empty()) {
      device = importers::FindDevice(device_);
      if (!device)
        return InvalidArgument("--device '" + device_ +
                               "': not in the table; known: " + importers::DeviceNames() +
                               " (or give --peak-gflops and --peak-gbps)");
    }
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const std::string& s : shapes_) {
      size_t eq = s.find('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 || !ParseShape(s.substr(eq + 1), &dims))
        return InvalidArgument("--shape '" + s +
                               "': expected NAME=DIMS such as "
                               "images=1x3x224x224");
      shapes[s.substr(0, eq)] = dims;
    }
    if (Status st = PrepareOutput(out_, "table"); !st.ok()) return st;

    profile::Profile p;
    std::string fmt_name;
    for (size_t i = 0; i < files_.size(); ++i) {
      const std::string& file = files_[i];
      auto src = importers::Source::Open(file);
      if (!src.ok()) return src.status();
      std::string_view head = (*src)->bytes().substr(0, importers::kSniffBytes);
      if (importers::trt::LooksLikeLayerInfo(head))
        return InvalidArgument(file +
                               ": this is TensorRT layer info, not a profile; "
                               "give it as --layer-info " +
                               file + " next to the --exportProfile file");
      auto one = [&] {
        ReadingProgress reading(file);
        return importers::Import(**src, format);
      }();
      if (!one.ok()) return one.status();
      std::string this_fmt = one->meta.import ? one->meta.import->format : "";
      if (i == 0) {
        p = std::move(*one);
        fmt_name = this_fmt;
      } else if (this_fmt != fmt_name) {
        return InvalidArgument(file + " is " + this_fmt + " but " + files_[0] + " is " + fmt_name +
                               ": import them separately");
      } else {
        MergeRuns(&p, std::move(*one), file);
      }
    }

    std::map<std::string, std::vector<std::string>> sources;
    if (!layer_info_.empty()) {
      if (fmt_name != "tensorrt")
        return InvalidArgument("--layer-info " + layer_info_ +
                               ": layer info is "
                               "TensorRT's (trtexec --exportLayerInfo), but " +
                               files_[0] + " is a " + fmt_name + " profile");
      auto text = ReadFile(layer_info_);
      if (!text.ok()) return text.status();
      auto info = importers::trt::ParseLayerInfo(*text, layer_info_);
      if (!info.ok()) return info.status();
      if (Status st = importers::trt::ApplyLayerInfo(*info, &p); !st.ok()) return st;
      for (const auto& l : info->layers)
        if (!l.onnx_nodes.empty()) sources[l.name] = l.onnx_nodes;
    }

    std::string join_line;
    if (!model_.empty()) {
      if (p.ops.empty())
        return InvalidArgument("--model: " + files_[0] + " (" + fmt_name +
                               ") has no per-layer rows to join with a model");
      importers::ModelJoinOptions jo;
      jo.model_path = model_;
      jo.shapes = shapes;
      jo.sources = std::move(sources);
      jo.runtime = RuntimeName(fmt_name);
      auto sum = importers::JoinModel(&p, jo);
      if (!sum.ok()) return sum.status();
      double unmatched = 0;
      for (const auto& u : sum->unmatched) unmatched += u.second;
      join_line = fmt::format(
          "model join: {} of {} rows matched ({:.1f}% of the time) onto {} of {} nodes of {}{}",
          sum->matched_rows, sum->rows, sum->matched_share * 100, sum->nodes_matched,
          sum->model_nodes, model_,
          sum->costs ? "" : " (no FLOPs/bytes: the engine could not load it)");
      if (!sum->unmatched.empty())
        join_line +=
            fmt::format("\nunmatched: {} rows, {:.1f}% of the time: {}", sum->unmatched.size(),
                        unmatched * 100, Join(p.meta.import->unmatched, ", "));
    } else if (!shapes.empty()) {
      return InvalidArgument("--shape applies to --model: give the model too");
    }
    profile::FinalizeStats(p);

    analysis::MachineCeilings c;
    bool have_ceilings = false;
    if (device) {
      c.peak_gflops_all = c.peak_gflops_one = device->peak_gflops;
      c.triad_gbps = device->peak_gbps;
      c.cpu_model = device->title;
      c.method = std::string("device table: ") + device->name + " (data-sheet peaks)";
      have_ceilings = true;
    } else if (peak_gflops_ > 0) {
      c.peak_gflops_all = c.peak_gflops_one = peak_gflops_;
      c.triad_gbps = peak_gbps_;
      c.method = "manual";
      have_ceilings = true;
    }
    // What was read and how it joined, as status lines: standard output holds only data.
    std::string said = fmt::format("imported {} ({})", Join(files_, " "), fmt_name);
    if (p.meta.runs > 0) said += fmt::format(", {} runs", p.meta.runs);
    report::Say("", said);
    if (!join_line.empty())
      for (const std::string& line : Split(join_line, '\n')) report::Say("", line);
    report::ReportOptions o;
    o.top = top_ == 0 || top_ > 1000000 ? 1000000 : static_cast<int>(top_);
    o.wide = wide_;
    o.samples.top = top_;
    o.color = report::WritesToStream(out_.targets) && UseColor(1);
    o.title = "opscope: " + Join(files_, " ");
    FinishOptions f;
    f.on_this_machine = false;  // the file was written elsewhere: this board says nothing of it
    f.ceilings = have_ceilings ? &c : nullptr;
    if (Status st = FinishProfile(&p, f, out_, o); !st.ok()) return st;
    return 0;
  }

 private:
  std::vector<std::string> files_, shapes_;
  std::string from_, model_, layer_info_, device_;
  double peak_gflops_ = 0, peak_gbps_ = 0;
  size_t top_ = 25;
  bool wide_ = false;
  OutputChoice out_;
};

}  // namespace

OPSCOPE_REGISTER_COMMAND(ImportCommand);

}  // namespace opscope::cli
