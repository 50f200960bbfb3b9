// opscope push: a saved profile to a continuous-profiling backend (report/push.h).
#include <string>
#include <utility>
#include <vector>

#include "cli/checks.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "importers/importer.h"
#include "report/push.h"
#include "report/say.h"

namespace opscope::cli {
namespace {

class PushCommand : public Command {
 public:
  const char* Name() const override { return "push"; }
  const char* Help() const override {
    return "send a profile to Grafana Pyroscope (its /ingest API, as pprof)";
  }
  void Setup(CLI::App* app) override {
    app->add_option("profile", file_, "a profile opscope wrote (.json, .rec) or can import")
        ->required();
    app->add_option("--to", url_, "the Pyroscope server, http://HOST:PORT[/PREFIX]")->required();
    app->add_option("--service", opt_.service,
                    "the application name in Pyroscope (default opscope)")
        ->check(NonEmpty());
    app->add_option("--label", labels_,
                    "KEY=VALUE added to the profile's own labels (kind, model, host, cpu); "
                    "repeatable, e.g. --label commit=$(git rev-parse --short HEAD) --label "
                    "device=orin-nx");
    app->add_option("--tenant", opt_.tenant, "X-Scope-OrgID for a multi-tenant Pyroscope");
    app->add_option("--timeout", opt_.timeout_s, "seconds for the whole request (default 30)")
        ->check(NumberIn(0.1, 3600, false));
  }
  CommandStatus Run() override {
    for (const std::string& l : labels_) {
      const size_t eq = l.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == l.size())
        return InvalidArgument("--label " + l + ": expected KEY=VALUE");
      opt_.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
    }
    auto p = [&] {
      ReadingProgress reading(file_);
      return importers::LoadProfileFile(file_);
    }();
    if (!p.ok()) return p.status();
    std::string said;
    if (Status st = report::PushToPyroscope(*p, url_, opt_, &said); !st.ok()) return st;
    report::Say("", said);
    return 0;
  }

 private:
  std::string file_, url_;
  std::vector<std::string> labels_;
  report::PushOptions opt_;
};

OPSCOPE_REGISTER_COMMAND(PushCommand);

}  // namespace
}  // namespace opscope::cli
