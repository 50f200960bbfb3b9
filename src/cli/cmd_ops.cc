// opscope ops: the ONNX operators the built-in engine runs.
#include <cstdio>

#include "cli/command.h"
#include "engine/kernel.h"

namespace opscope::cli {
namespace {

class OpsCommand : public Command {
 public:
  const char* Name() const override { return "ops"; }
  const char* Help() const override { return "List the ONNX operators the built-in engine supports"; }
  void Setup(CLI::App*) override {}
  int Run() override {
    auto ops = engine::SupportedOperators();
    std::printf("%zu ONNX operators (default domain, opsets 7-21):\n", ops.size());
    for (const auto& op : ops) std::printf("  %s\n", op.c_str());
    return 0;
  }
};

}  // namespace
OPSCOPE_REGISTER_COMMAND(OpsCommand);
}  // namespace opscope::cli
