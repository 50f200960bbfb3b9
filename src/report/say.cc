#include "report/say.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

#include "report/format.h"

namespace opscope::report {
namespace {

std::atomic<bool> g_quiet{false};

}  // namespace

void SetQuiet(bool quiet) { g_quiet = quiet; }
bool Quiet() { return g_quiet; }

bool Say(std::string_view kind, const std::string& text) {
  if (g_quiet) return false;
  std::string line = "opscope: ";
  if (!kind.empty()) line += std::string(kind) + ": ";
  line += EscapeControl(text);
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (!said.insert(line).second) return false;
  std::fprintf(stderr, "%s\n", line.c_str());
  return true;
}

}  // namespace opscope::report
