// Findings: advice with its evidence, produced by analysis/ rules.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace opscope::profile {

// How much a finding matters; findings are listed most severe first. JSON names: "critical",
// "warning", "info" (SeverityName).
enum class Severity { kCritical, kWarning, kInfo };
const char* SeverityName(Severity s);
bool ParseSeverity(const std::string& name, Severity* out);

struct Finding {
  std::string rule;  // rule id, e.g. "layout-transform-share"
  Severity severity = Severity::kInfo;
  std::string title;                      // one line
  std::string evidence;                   // the numbers that triggered it, in words
  std::string suggestion;                 // what to do
  std::vector<std::string> ops;           // names of the ops concerned
  std::map<std::string, double> numbers;  // the same evidence, machine-readable
};

}  // namespace opscope::profile
