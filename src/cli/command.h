// Subcommands register themselves: adding one is one file `cmd_NAME.cc` in this folder (the
// build globs them) with one OPSCOPE_REGISTER_COMMAND line. cli/ is the only layer that turns a
// Status into a message on stderr and an exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace opscope::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual const char* Name() const = 0;
  virtual const char* Help() const = 0;
  // Declares options on the subcommand; values are bound to members of the command.
  virtual void Setup(CLI::App* app) = 0;
  // Runs after parsing. Returns the process exit code.
  virtual int Run() = 0;
};

using CommandFactory = std::function<std::unique_ptr<Command>()>;
bool RegisterCommand(CommandFactory factory);
const std::vector<CommandFactory>& RegisteredCommands();

// Prints "opscope: error: <message>" (plus a hint for permission problems) and returns the exit
// code for the status: 2 for bad arguments/input, 1 for everything else.
int ReportError(const Status& status);

// True when stdout/stderr is a terminal and NO_COLOR is unset.
bool UseColor(int fd);
bool IsTerminal(int fd);

}  // namespace opscope::cli

#define OPSCOPE_REGISTER_COMMAND(Type)                                     \
  static const bool OPSCOPE_CONCAT(kRegistered_, Type) =                   \
      ::opscope::cli::RegisterCommand([] { return std::make_unique<Type>(); })
