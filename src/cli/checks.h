// Checks shared by the numeric (and must-not-be-empty) options of every subcommand.
//
// CLI11 runs a validator on the option's text before converting it, so these see "-1" before it
// can wrap into an unsigned field and "nan"/"inf" before they reach a double. A refused value
// becomes one line, "opscope: error: --top: ...", and exit status 2 (main.cc).
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "base/host.h"
#include "base/strings.h"

namespace opscope::cli {

// A finite number in [lo, hi]; with `integer`, a whole number. `lo_open` excludes lo itself
// ("above 0"). The message says what is expected and what was given.
inline CLI::Validator NumberIn(double lo, double hi, bool integer, bool lo_open = false) {
  std::string expected;
  const bool no_hi = hi >= std::numeric_limits<double>::max();
  const char* kind = integer ? "a whole number" : "a number";
  auto num = [](double v) {  // 1000000, not 1e+06
    return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v)
                                                     : fmt::format("{:g}", v);
  };
  if (lo_open && no_hi)
    expected = fmt::format("{} above {}", kind, num(lo));
  else if (no_hi)
    expected = fmt::format("{} of at least {}", kind, num(lo));
  else if (lo_open)
    expected = fmt::format("{} above {} and at most {}", kind, num(lo), num(hi));
  else
    expected = fmt::format("{} from {} to {}", kind, num(lo), num(hi));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        bool ok;
        if (integer) {
          int64_t i = 0;
          ok = ParseInt64(text, &i);
          v = static_cast<double>(i);
        } else {
          ok = ParseDouble(text, &v) && std::isfinite(v);
        }
        if (!ok || v < lo || v > hi || (lo_open && v == lo))
          return "must be " + expected + " (got '" + text + "')";
        return "";
      },
      expected);
}

// Common cases.
inline CLI::Validator PositiveFinite(double hi = std::numeric_limits<double>::max()) {
  return NumberIn(0, hi, /*integer=*/false, /*lo_open=*/true);
}
inline CLI::Validator WholeNumberIn(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  return NumberIn(static_cast<double>(lo),
                  hi == std::numeric_limits<int64_t>::max() ? std::numeric_limits<double>::max()
                                                            : static_cast<double>(hi),
                  /*integer=*/true);
}
inline CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
      "TEXT");
}

// --sysroot DIR: read the /proc, /sys and /etc that describe the machine (host facts, doctor,
// machine, board telemetry) from DIR instead (base/host.h SetSysroot). DIR must be a folder.
inline void AddSysrootOption(CLI::App* app) {
  app->add_option_function<std::string>(
         "--sysroot", [](const std::string& dir) { SetSysroot(dir); },
         "Read the machine's /proc, /sys and /etc from DIR (a copy of a board's files)")
      ->check(CLI::ExistingDirectory);
}

}  // namespace opscope::cli
