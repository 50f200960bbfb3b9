// opscope report FILE: renders any profile opscope writes or imports — every section it holds
// (ops, stat counters, samples, ranges, gpu) — in any registered format (report/format.h).
// `.json` is always the profile itself; the hot-functions table as JSON is `hot-json`.
#include <algorithm>
#include <cstdio>

#include "analysis/machine.h"
#include "analysis/rules.h"
#include "base/files.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "collect/symbolize.h"
#include "importers/importer.h"
#include "profile/profile_io.h"
#include "report/samples_report.h"
#include "report/say.h"

namespace opscope::cli {
namespace {

class ReportCommandCli : public Command {
 public:
  const char* Name() const override { return "report"; }
  const char* Help() const override {
    return "render any opscope profile: op tables, counters, ranges, GPU tables, hot functions, "
           "flame graph, pprof, timeline";
  }
  void Setup(CLI::App* app) override {
    app->add_option("file", file_, "Record file or JSON profile (default opscope.rec)");
    app->add_option("-i,--input", input_, "The profile to read (perf's spelling of FILE)");
    app->add_option("--sort", sort_,
                    "Order and keys of the hot-functions rows, comma-separated: self (default; "
                    "perf's overhead), inclusive (children), name; comm/pid/tid group by thread, "
                    "dso by module, sym by function, op by operator; mem shows the memory "
                    "section first (steps by live bytes, the tensors alive at the peak)");
    app->add_flag("--children", children_, "Sort by inclusive time (perf's --children)");
    app->add_flag("--no-children", no_children_,
                  "Hide the inclusive column and sort by self time (perf's --no-children)");
    app->add_option("--threshold,--percent-limit", threshold_,
                    "Hide rows below this share in percent (default 0.5)")
        ->check(NumberIn(0, 100, false));
    top_option_ = app->add_option("--top", top_,
                                  "Rows to show (per group; op tables 20 unless given), 0 = all "
                                  "(default 40)")
                      ->check(WholeNumberIn(0, 1000000000));
    app->add_option("--group", group_, "function (default), thread, module or op");
    app->add_option("-f,--function", function_,
                    "Caller/callee view of the functions matching NAME");
    app->add_option("--sections", sections_,
                    "Render only these sections, comma-separated: ops, stat, samples, ranges, gpu, "
                    "memory, threadpool, telemetry (default: every section the profile holds)");
    app->add_option("--machine", machine_file_,
                    "Diagnose the profile again against these machine ceilings (a file of "
                    "`opscope machine`): per-op roofline verdicts, expected times and findings");
    app->add_flag("--wide", wide_, "Show long names whole");
    // perf report's --stdio: the terminal tables, which are what `report` prints anyway.
    app->add_flag("--stdio", stdio_, "The tables as text (perf report's --stdio; the default)");
    app->add_flag("--gpu-trace", gpu_trace_, "GPU section: list every kernel and copy");
    AddOutputOptions(app, &out_,
                     "e.g. .txt, .json (the profile), .hot.json, .csv, .trace.json, "
                     ".folded, .svg, .pb.gz");
  }
  CommandStatus Run() override {
    if (!input_.empty()) file_ = input_;
    report::ReportOptions o;
    o.samples.group = report::SampleGroup::kFunction;
    if (!group_.empty()) {
      auto group = report::ParseSampleGroup(group_);
      if (!group.ok()) return group.status();
      o.samples.group = *group;
    }
    // `mem`: the memory section first, its steps by live bytes; the other keys order samples.
    std::vector<std::string> sample_keys;
    for (const std::string& k : Split(sort_, ',', /*skip_empty=*/true)) {
      if (Trim(k) == "mem" || Trim(k) == "memory")
        o.primary = "memory";
      else
        sample_keys.push_back(k);
    }
    if (o.primary.empty() || !sample_keys.empty())
      if (Status st = report::ParseSortKeys(o.primary.empty() ? sort_ : Join(sample_keys, ","),
                                            &o.samples.sort, &o.samples.group);
          !st.ok())
        return st;
    if (children_ && no_children_)
      return InvalidArgument("choose one of --children and --no-children");
    if (children_) o.samples.sort = report::SampleSort::kInclusive;
    if (no_children_) {
      o.samples.children = false;
      if (o.samples.sort == report::SampleSort::kInclusive)
        o.samples.sort = report::SampleSort::kSelf;
    }
    o.samples.threshold_pct = threshold_;
    o.samples.top = top_;
    // The op tables too, when given (0 = all).
    if (top_option_->count() > 0)
      o.top = top_ == 0 || top_ > 1000000 ? 1000000 : static_cast<int>(top_);
    o.samples.function = function_;
    o.samples.wide = wide_;
    o.wide = wide_;
    o.gpu_trace = gpu_trace_;
    for (const std::string& s : Split(sections_, ',', /*skip_empty=*/true)) {
      if (!report::FindSection(s)) {
        std::vector<const report::Section*> known;
        for (const report::Section& k : report::Sections()) known.push_back(&k);
        std::sort(
            known.begin(), known.end(),
            [](const report::Section* a, const report::Section* b) { return a->order < b->order; });
        std::string names;
        for (size_t i = 0; i < known.size(); ++i)
          names += (i == 0                  ? ""
                    : i + 1 == known.size() ? " or "
                                            : ", ") +
                   std::string(known[i]->name);
        return InvalidArgument("--sections '" + s + "': expected " + names);
      }
      o.only.push_back(s);
    }
    if (Status st = PrepareOutput(out_, "table"); !st.ok()) return st;
    o.color = report::WritesToStream(out_.targets) && UseColor(1);

    auto loaded = [&] {
      ReadingProgress reading(file_);
      return importers::LoadProfileFile(file_);
    }();
    if (!loaded.ok()) return loaded.status();
    profile::Profile& p = *loaded;
    if (!machine_file_.empty()) {
      // The ceilings of the machine the profile was taken on, as given: not checked against
      // this CPU (Diagnose notes a CPU model that differs from the profile's).
      auto text = ReadFile(machine_file_);
      if (!text.ok()) return text.status();
      auto ceilings = analysis::CeilingsFromJson(*text, machine_file_);
      if (!ceilings.ok()) return ceilings.status();
      if (!ceilings->Usable())
        return InvalidArgument("--machine " + machine_file_ +
                               ": no compute and memory roof in it (run `opscope machine`)");
      analysis::Diagnose(&p, &*ceilings);
      if (Status st = profile::Validate(p); !st.ok()) return st.WithPrefix(file_);
    }
    o.title = "opscope: " + (p.meta.source.empty() ? file_ : p.meta.source);
    if (o.samples.group == report::SampleGroup::kOp && p.samples) {
      bool any = false;
      for (const auto& s : p.samples->samples) any = any || s.op >= 0;
      if (!any)
        report::Say("note",
                    "no sample is attributed to an op (this profile did not come from `opscope "
                    "profile --sample`): all fall in [outside ops]");
    }
    if (!function_.empty() && !(p.samples && !p.samples->samples.empty()))
      return InvalidArgument(file_ + ": -f needs call-stack samples, and this profile has none");
    Status st = report::WriteOutputs(p, out_.targets, o, stdout, stderr);
    if (!st.ok()) return st.WithPrefix(file_);
    return 0;
  }

 private:
  std::string file_ = "opscope.rec";
  std::string input_;
  std::string sort_ = "self";
  bool children_ = false, no_children_ = false;
  double threshold_ = 0.5;
  size_t top_ = 40;
  CLI::Option* top_option_ = nullptr;
  std::string group_;
  std::string function_;
  std::string sections_;
  bool wide_ = false, gpu_trace_ = false;
  bool stdio_ = false;  // accepted for perf's habit: the tables are the default
  std::string machine_file_;
  OutputChoice out_;
};

}  // namespace
}  // namespace opscope::cli

using opscope::cli::ReportCommandCli;
OPSCOPE_REGISTER_COMMAND(ReportCommandCli);
