// The status lines opscope prints on standard error beside its data: "opscope: note: ...",
// "opscope: warning: ...", "opscope: wrote ...". Each distinct line is said once per process (a
// recording's "no debug info" warning is not repeated for every -o file that renders the
// samples), and -q/--quiet silences them all. Errors are not status lines: cli/main.cc prints
// the one error line whatever -q says.
#pragma once

#include <string>
#include <string_view>

namespace opscope::report {

void SetQuiet(bool quiet);
bool Quiet();

// "opscope: KIND: TEXT" ("opscope: TEXT" when `kind` is empty) on stderr, control characters
// escaped, unless quiet or already said. Returns whether it was printed.
bool Say(std::string_view kind, const std::string& text);

}  // namespace opscope::report
