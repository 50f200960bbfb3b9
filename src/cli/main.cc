// opscope's entry point: builds the CLI11 app from the registered subcommands.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <type_traits>

#include "base/launch.h"
#include "base/strings.h"
#include "base/version.h"
#include "cli/command.h"
#include "collect/doctor.h"
#include "engine/library_versions.h"
#include "report/say.h"

namespace opscope::cli {

std::vector<CommandFactory>& MutableCommands() {
  static std::vector<CommandFactory> commands;
  return commands;
}
bool RegisterCommand(CommandFactory factory) {
  MutableCommands().push_back(std::move(factory));
  return true;
}
const std::vector<CommandFactory>& RegisteredCommands() { return MutableCommands(); }

int CommandStatus::exit_code() const {
  if (status_.ok() || explicit_code_) return exit_code_;
  switch (status_.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnsupported:
    case StatusCode::kDataLoss:
      return 2;
    default:
      return 1;
  }
}

CommandStatus StartError(const Status& status) {
  return CommandStatus(status).WithExitCode(ExitCodeForStartError(status));
}

// A message for the terminal: messages quote names from other people's files, so a NUL (which
// would cut the line), escape sequences and invalid UTF-8 are shown, not obeyed.
std::string Printable(const std::string& message) {
  std::string out;
  for (unsigned char c : ToValidUtf8(message)) {
    if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) {
      out += static_cast<char>(c);
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// What is still buffered for standard output, written and checked (perf's run_builtin does the
// same): a full disk or a closed pipe is an error naming the output, not a silent exit 0.
int FinishStdout(int code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    const int err = errno;
    std::fprintf(stderr, "opscope: error: standard output: write failed: %s\n",
                 std::strerror(err != 0 ? err : EIO));
    return code == 0 ? 1 : code;
  }
  return code;
}

// The one place a command's outcome becomes output and an exit status.
int Finish(const CommandStatus& result) {
  if (!result.ok()) {
    std::fprintf(stderr, "opscope: error: %s\n", Printable(result.status().message()).c_str());
    for (const std::string& note : result.notes())
      std::fprintf(stderr, "opscope: %s\n", Printable(note).c_str());
  }
  return FinishStdout(result.exit_code());
}

bool IsTerminal(int fd) { return isatty(fd) == 1; }
bool UseColor(int fd) {
  const char* nc = std::getenv("NO_COLOR");
  return IsTerminal(fd) && (nc == nullptr || nc[0] == '\0');
}

// `opscope --version`: what was built, from which commit, with what, against which libraries.
std::string VersionText() {
  const std::string cupti = OPSCOPE_CUPTI_VERSION;
  return std::string("opscope ") + OPSCOPE_VERSION + "\n" + "commit:   " + OPSCOPE_GIT_COMMIT +
         "\n" + "build:    " + OPSCOPE_BUILD_TYPE + ", " + OPSCOPE_COMPILER + "\n" +
         "oneDNN:   " + opscope::engine::OneDnnVersion() + "\n" +
         "libonnx:  " + opscope::engine::OnnxVersion() + "\n" +
         "libdw:    " + opscope::collect::LibdwVersion() + "\n" +
         "CUPTI:    " + (cupti.empty() ? "not built (no CUDA toolkit at build time)" : cupti);
}

// CLI11's parse errors in opscope's words: what was wrong with which option, never the library's
// phrasing ("The following argument was not expected", "At Most 1 required but received 2").
std::string UsageMessage(const CLI::ParseError& e, const std::string& commands) {
  // By type: get_name() is the class name only for some (an ExtrasError may carry the
  // subcommand's name instead).
  const std::string what = e.what();
  auto is = [&](auto* type) {
    return dynamic_cast<std::remove_pointer_t<decltype(type)> const*>(&e) != nullptr;
  };
  std::smatch m;
  if (is(static_cast<CLI::ExtrasError*>(nullptr))) {
    const size_t colon = what.find(": ");
    // CLI11 lists them last first: back in the order given.
    std::vector<std::string> args =
        Split(colon == std::string::npos ? what : what.substr(colon + 2), ' ', true);
    std::reverse(args.begin(), args.end());
    const std::string extra = Join(args, " ");
    return (extra.find(' ') == std::string::npos ? "unexpected argument '" + extra + "'"
                                                 : "unexpected arguments: " + extra);
  }
  if (is(static_cast<CLI::ArgumentMismatch*>(nullptr))) {
    static const std::regex kMissing(R"((\S+): (\d+) required (?:[A-Z0-9_]+:)?(.*) missing)");
    static const std::regex kAtMost(R"((\S+): At Most (\d+) required but received (\d+))");
    static const std::regex kAtLeast(R"((\S+): At least (\d+) required but received (\d+))");
    static const std::regex kExactly(
        R"(Expected (exactly|at least) (\d+) arguments to (\S+), got (\d+))");
    if (std::regex_match(what, m, kMissing)) {
      // The type's name alone (TEXT, INT, FLOAT) says nothing a user needs.
      static const std::regex kBareType("[A-Z0-9_ ]*");
      const std::string kind = m[3].str();
      return m[1].str() + " needs a value" +
             (kind.empty() || std::regex_match(kind, kBareType) ? "" : ": " + kind);
    }
    if (std::regex_match(what, m, kAtMost))
      return m[1].str() + " takes at most " + m[2].str() + " value(s), got " + m[3].str();
    if (std::regex_match(what, m, kAtLeast))
      return m[1].str() + " takes at least " + m[2].str() + " value(s), got " + m[3].str();
    if (std::regex_match(what, m, kExactly))
      return m[3].str() + " takes " + m[1].str() + " " + m[2].str() + " value(s), got " +
             m[4].str();
  }
  if (is(static_cast<CLI::RequiredError*>(nullptr))) {
    if (what.find("subcommand") != std::string::npos) return "give a command: " + commands;
    static const std::regex kRequired(R"((.+) is required)");
    if (std::regex_match(what, m, kRequired)) return "missing " + m[1].str();
  }
  if (is(static_cast<CLI::ExcludesError*>(nullptr))) {
    static const std::regex kExcludes(R"((\S+) excludes (\S+))");
    if (std::regex_match(what, m, kExcludes))
      return m[1].str() + " cannot be used with " + m[2].str();
  }
  if (is(static_cast<CLI::ConversionError*>(nullptr))) {
    static const std::regex kConvert(R"(Could not convert: (\S+) = (.*))");
    if (std::regex_match(what, m, kConvert))
      return m[1].str() + ": '" + m[2].str() + "' is not a value it takes";
  }
  return what;  // opscope's own validators (cli/checks.h) already speak for themselves
}

}  // namespace opscope::cli

int main(int argc, char** argv) {
  using namespace opscope::cli;
  // Named, so that usage lines say `opscope profile`, not the path it was started by.
  CLI::App app{
      "opscope: find the hot operators of neural-network inference, say why, and what to do",
      "opscope"};
  app.set_version_flag("--version", VersionText());
  app.require_subcommand(1);
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet,
               "print only data and errors: no notes, warnings, progress or 'wrote' lines "
               "(before or after the command)");
  app.fallthrough();  // -q after the command name is the program's too
  std::vector<std::unique_ptr<Command>> commands;
  std::vector<std::pair<CLI::App*, Command*>> subs;
  for (const auto& factory : RegisteredCommands()) {
    commands.push_back(factory());
    Command* c = commands.back().get();
    CLI::App* sub = app.add_subcommand(c->Name(), c->Help());
    c->Setup(sub);
    subs.emplace_back(sub, c);
  }
  // The first word that is not an option names the command: an unknown one is named in the
  // error (CLI11 would only say that a subcommand is required).
  bool known = false;
  std::string names;
  for (const auto& [sub, c] : subs) {
    known |= argc > 1 && sub->get_name() == argv[1];
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "opscope: error: unknown command '%s' (commands: %s; see --help)\n",
                 argv[1], names.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; every other parse error is a usage error: one
    // line and exit status 2, like the errors the commands report themselves.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "opscope: error: %s (see --help)\n",
                 Printable(UsageMessage(e, names)).c_str());
    return 2;
  }
  opscope::report::SetQuiet(quiet);
  for (auto& [sub, c] : subs)
    if (sub->parsed()) return Finish(c->Run());
  return 2;
}
