// `opscope diff BEFORE AFTER`: end-to-end change with a confidence interval, per-node and
// per-op-type deltas, appeared/disappeared nodes and shape changes.
#include <cstdio>

#include "analysis/diff.h"
#include "base/files.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "profile/profile_io.h"

namespace opscope::cli {

class DiffCommand : public Command {
 public:
  const char* Name() const override { return "diff"; }
  const char* Help() const override { return "compare two profiles (before/after)"; }
  void Setup(CLI::App* app) override {
    app->add_option("before", before_, "profile JSON before the change")->required();
    app->add_option("after", after_, "profile JSON after the change")->required();
    app->add_option("--format", format_, "table or json (default: from -o, else table)")
        ->check(CLI::IsMember({"table", "json"}));
    app->add_option("-o,--output", output_, "write to FILE instead of stdout");
    app->add_option("--rows", rows_, "rows per table (default 25)")->check(WholeNumberIn(1, 1000000));
    app->add_flag("--force", force_, "compare profiles of different kinds (e.g. `profile` and `run`) anyway");
  }

  int Run() override {
    std::string format = format_;
    if (format.empty()) format = EndsWith(output_, ".json") ? "json" : "table";
    if (!output_.empty())
      if (Status st = CheckWritable(output_); !st.ok()) return ReportError(st);
    auto a = profile::LoadProfile(before_);
    if (!a.ok()) return ReportError(a.status());
    auto b = profile::LoadProfile(after_);
    if (!b.ok()) return ReportError(b.status());
    if (std::string why = analysis::KindMismatch(*a, *b); !why.empty() && !force_)
      return ReportError(InvalidArgument(before_ + " vs " + after_ + ": " + why +
                                         "; compare like with like, or pass --force"));
    analysis::ProfileDiff d = analysis::DiffProfiles(*a, *b);
    std::string text = format == "json" ? analysis::DiffToJson(d)
                                        : analysis::FormatDiff(d, output_.empty() && UseColor(1), rows_);
    if (output_.empty()) {
      std::fputs(text.c_str(), stdout);
      return 0;
    }
    if (Status st = WriteFileAtomic(output_, text); !st.ok()) return ReportError(st);
    std::fprintf(stdout, "%s\n", d.headline.c_str());
    return 0;
  }

 private:
  std::string before_, after_, format_, output_;
  size_t rows_ = 25;
  bool force_ = false;
};

OPSCOPE_REGISTER_COMMAND(DiffCommand);

}  // namespace opscope::cli
