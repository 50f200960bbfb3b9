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

// What a command ends with; main() alone turns it into the process's exit status and, for an
// error, the one line "opscope: error: <message>" on stderr (README "Exit codes"):
//   - success: an exit status, 0, or for commands that run a target the target's own status
//     (128+N for signal N; base/launch.h TargetExitCode);
//   - an error (a non-OK Status): exit status 2 for bad arguments and input (InvalidArgument,
//     NotFound, Unsupported, DataLoss), 1 for everything else, unless the command gives its own
//     (WithExitCode: 126/127 for a target that could not start, StartError below; a target's
//     status after a partial write), and notes printed after the error line (AndThen).
class CommandStatus {
 public:
  CommandStatus(int exit_code = 0) : exit_code_(exit_code) {}   // NOLINT: `return 0;`
  CommandStatus(Status status) : status_(std::move(status)) {}  // NOLINT: `return st;`

  // The exit status of an error, instead of the one its StatusCode gives.
  CommandStatus WithExitCode(int code) && {
    exit_code_ = code;
    explicit_code_ = true;
    return std::move(*this);
  }
  // A line "opscope: <note>" printed after the error line (what was kept, what to run next).
  CommandStatus AndThen(std::string note) && {
    notes_.push_back(std::move(note));
    return std::move(*this);
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const std::vector<std::string>& notes() const { return notes_; }
  // The process's exit status (the table above).
  int exit_code() const;

 private:
  Status status_;
  int exit_code_ = 0;
  bool explicit_code_ = false;
  std::vector<std::string> notes_;
};

// A target that could not be started (base/launch.h wording): exit status 127 when it was not
// found, 126 when it cannot be executed.
CommandStatus StartError(const Status& status);

class Command {
 public:
  virtual ~Command() = default;
  virtual const char* Name() const = 0;
  virtual const char* Help() const = 0;
  // Declares options on the subcommand; values are bound to members of the command.
  virtual void Setup(CLI::App* app) = 0;
  // Runs after parsing; main() turns the result into the exit status and error line.
  virtual CommandStatus Run() = 0;
};

using CommandFactory = std::function<std::unique_ptr<Command>()>;
bool RegisterCommand(CommandFactory factory);
const std::vector<CommandFactory>& RegisteredCommands();

// True when stdout/stderr is a terminal and NO_COLOR is unset.
bool UseColor(int fd);
bool IsTerminal(int fd);

}  // namespace opscope::cli

#define OPSCOPE_REGISTER_COMMAND(Type)                   \
  static const bool OPSCOPE_CONCAT(kRegistered_, Type) = \
      ::opscope::cli::RegisterCommand([] { return std::make_unique<Type>(); })
