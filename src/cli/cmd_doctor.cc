// `opscope doctor`: checks this machine for measuring (perf permissions, PMU, clocks, memory,
// topology, CUDA driver) and says what each finding means for measurement quality
// (collect/doctor.h). Exits 1 when a check is "bad" (opscope cannot measure here), else 0.
#include <fmt/format.h>

#include <cstdio>

#include "cli/checks.h"
#include "cli/command.h"
#include "collect/doctor.h"

namespace opscope::cli {
namespace {

// `text` as lines of at most `width` columns, each indented by `indent` spaces.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

class DoctorCommand : public Command {
 public:
  const char* Name() const override { return "doctor"; }
  const char* Help() const override {
    return "check this machine for measuring: perf permissions, PMU, governor, turbo, THP, NUMA, "
           "SMT, CUDA driver";
  }
  void Setup(CLI::App* app) override { AddSysrootOption(app); }

  CommandStatus Run() override {
    const auto checks = collect::RunDoctorChecks();
    bool bad = false;
    std::string out;
    for (const auto& c : checks) {
      bad = bad || c.level == collect::DoctorCheck::Level::kBad;
      out += fmt::format("{:<5} {:<23} {}\n", collect::LevelName(c.level), c.area, c.finding);
      out += Wrap(c.meaning, 30, 100);
    }
    std::fputs(out.c_str(), stdout);
    return bad ? 1 : 0;
  }
};

}  // namespace

OPSCOPE_REGISTER_COMMAND(DoctorCommand);

}  // namespace opscope::cli
