// Findings: advice with its evidence, produced by analysis/ rules.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace opscope::profile {

struct Finding {
  std::string rule;                       // rule id, e.g. "layout-transform-share"
  std::string severity;                   // "info", "warning", "critical"
  std::string title;                      // one line
  std::string evidence;                   // the numbers that triggered it, in words
  std::string suggestion;                 // what to do
  std::vector<std::string> ops;           // names of the ops concerned
  std::map<std::string, double> numbers;  // the same evidence, machine-readable
};

}  // namespace opscope::profile
