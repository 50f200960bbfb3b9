// `opscope diff BEFORE AFTER`: end-to-end change with a confidence interval, per-node and
// per-op-type deltas, appeared/disappeared nodes and shape changes, memory; written like every
// command's output (cli/output.h: -o repeatable, --format, -o -) in the formats of
// report/diff_output.h (table, json, csv, html, chrome). --fail-above / --fail-op-above make it a
// CI performance gate (analysis/diff_gate.h): exit 1 when "after" is slower beyond the threshold
// and the 95% interval excludes 0, with the verdict line on stderr.
#include <cstdio>

#include "analysis/diff.h"
#include "analysis/diff_gate.h"
#include "base/files.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "importers/importer.h"
#include "profile/profile_io.h"
#include "report/diff_output.h"
#include "report/say.h"

namespace opscope::cli {

class DiffCommand : public Command {
 public:
  const char* Name() const override { return "diff"; }
  const char* Help() const override { return "compare two profiles (before/after)"; }
  void Setup(CLI::App* app) override {
    app->add_option("before", before_, "profile JSON before the change")->required();
    app->add_option("after", after_, "profile JSON after the change")->required();
    // A diff renders in the formats that need no particular section (report/diff_output.h).
    AddOutputOptions(app, &out_,
                     "a diff is written as table (.txt), json, csv, html or chrome (.trace.json: "
                     "both timelines, one above the other)",
                     {"diff"});
    app->add_option("--rows", rows_, "rows per table (default 25)")
        ->check(WholeNumberIn(1, 1000000));
    app->add_flag("--force", force_,
                  "compare profiles of different kinds (e.g. `profile` and `run`) anyway");
    fail_above_opt_ =
        app->add_option(
               "--fail-above", fail_above_,
               "exit 1 when after is slower end to end by more than PCT percent and the 95% "
               "interval excludes 0 (a CI gate)")
            ->check(NumberIn(0, 1e6, false));
    fail_op_above_opt_ =
        app->add_option("--fail-op-above", fail_op_above_,
                        "exit 1 when any node is slower by more than PCT percent and its 95% "
                        "interval excludes 0")
            ->check(NumberIn(0, 1e6, false));
  }

  CommandStatus Run() override {
    OPSCOPE_RETURN_IF_ERROR(PrepareOutput(out_, "table"));
    for (const auto& t : out_.targets)
      if (!report::DiffWrites(t.format->name))
        return InvalidArgument("a diff is written as " + report::DiffFormatNames() + ", not " +
                               t.format->name +
                               (t.path.empty() ? std::string() : " (" + t.path + ")") +
                               "; render each profile with `opscope report FILE -o ...`");
    auto a = [&] {
      ReadingProgress reading(before_);
      return importers::LoadProfileFile(before_);
    }();
    if (!a.ok()) return a.status();
    auto b = [&] {
      ReadingProgress reading(after_);
      return importers::LoadProfileFile(after_);
    }();
    if (!b.ok()) return b.status();
    if (std::string why = analysis::KindMismatch(*a, *b); !why.empty() && !force_)
      return InvalidArgument(before_ + " vs " + after_ + ": " + why +
                             "; compare like with like, or pass --force");
    analysis::ProfileDiff d = analysis::DiffProfiles(*a, *b);
    analysis::GateOptions gate;
    if (fail_above_opt_->count()) gate.fail_above_pct = fail_above_;
    if (fail_op_above_opt_->count()) gate.fail_op_above_pct = fail_op_above_;
    analysis::GateVerdict verdict;
    if (gate.fail_above_pct || gate.fail_op_above_pct) {
      auto v = analysis::EvaluateGate(*a, *b, d, gate);
      if (!v.ok()) return v.status();
      verdict = std::move(*v);
    }
    report::DiffRender r{*a, *b, d, before_, after_, rows_, false};
    const bool color = UseColor(1);
    Status written = report::WriteRenderedOutputs(
        out_.targets,
        [&](const report::Format& f, bool to_file, std::string* text) {
          r.color = !to_file && color && out_.format.empty();
          return report::RenderDiff(f, r, text);
        },
        stdout, stderr);
    if (!report::WritesToStream(out_.targets))
      if (Status st = report::WriteStream(d.headline + "\n", stdout); !st.ok() && written.ok())
        written = st;
    if (!written.ok()) return written;
    std::fflush(stdout);
    for (const auto& line : verdict.lines) report::Say("", line);
    return verdict.failed ? 1 : 0;
  }

 private:
  std::string before_, after_;
  OutputChoice out_;
  size_t rows_ = 25;
  bool force_ = false;
  double fail_above_ = 0, fail_op_above_ = 0;
  CLI::Option* fail_above_opt_ = nullptr;
  CLI::Option* fail_op_above_opt_ = nullptr;
};

OPSCOPE_REGISTER_COMMAND(DiffCommand);

}  // namespace opscope::cli
