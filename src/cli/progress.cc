#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "report/say.h"

namespace opscope::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(isatty(2) == 1 && !report::Quiet()) {}
ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int done, int total) {
  if (!enabled_ || total <= 0) return;
  int pct = done * 100 / total;
  if (pct == last_percent_) return;
  last_percent_ = pct;
  const int width = 30;
  int filled = pct * width / 100;
  std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% (%d/%d)", label_.c_str(), filled,
               "##############################", width - filled, "", pct, done, total);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (enabled_ && last_percent_ >= 0) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  last_percent_ = -1;
  enabled_ = false;
}

}  // namespace opscope::cli
