// opscope ops: the ONNX operators the built-in engine runs (`--format json` for scripts).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/kernel.h"
#include "profile/json_text.h"

namespace opscope::cli {
namespace {

class OpsCommand : public Command {
 public:
  const char* Name() const override { return "ops"; }
  const char* Help() const override {
    return "list the ONNX operators the built-in engine supports";
  }
  void Setup(CLI::App* app) override {
    app->add_option("--format", format_, "table (default) or json")
        ->check(CLI::IsMember({"table", "json"}));
  }
  CommandStatus Run() override {
    auto ops = engine::SupportedOperators();
    if (format_ == "json") {
      nlohmann::json j = {{"schema", "opscope.ops/1"},
                          {"domain", "ai.onnx"},
                          {"opset_min", 7},
                          {"opset_max", 21},
                          {"operators", ops}};
      std::printf("%s\n", profile::DumpJson(j, 1).c_str());
      return 0;
    }
    std::printf("%zu ONNX operators (default domain, opsets 7-21):\n", ops.size());
    for (const auto& op : ops) std::printf("  %s\n", op.c_str());
    return 0;
  }

 private:
  std::string format_ = "table";
};

}  // namespace
OPSCOPE_REGISTER_COMMAND(OpsCommand);
}  // namespace opscope::cli
