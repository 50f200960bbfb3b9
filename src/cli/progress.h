// A progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <string>

namespace opscope::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void Update(int done, int total);
  void Finish();

 private:
  std::string label_;
  bool enabled_;
  int last_percent_ = -1;
};

}  // namespace opscope::cli
