#include "cli/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/clock.h"
#include "base/strings.h"
#include "importers/importer.h"
#include "report/say.h"

namespace opscope::cli {

Progress::Progress() : terminal_(isatty(2) == 1), enabled_(!report::Quiet()), started_ns_(NowNs()) {
  if (const char* s = std::getenv("OPSCOPE_PROGRESS_SECONDS")) {
    double v = 0;
    if (ParseDouble(s, &v) && v >= 0 && v < 1e6) interval_s_ = v;
  }
  last_line_ns_ = started_ns_;
}

Progress::~Progress() { Finish(); }

std::string Progress::Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[48];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%d min %d s", static_cast<int>(s / 60),
                  static_cast<int>(std::fmod(s, 60)));
  else
    std::snprintf(buf, sizeof buf, "%d h %d min", static_cast<int>(s / 3600),
                  static_cast<int>(std::fmod(s, 3600) / 60));
  return buf;
}

void Progress::Phase(const std::string& name, int total) {
  phase_ = name;
  detail_.clear();
  total_ = total;
  done_ = 0;
  phase_start_ns_ = NowNs();
  Draw(false);
}

void Progress::Update(int done, const std::string& detail) {
  done_ = done;
  detail_ = detail;
  Draw(false);
}

void Progress::Draw(bool force) {
  if (!enabled_) return;
  const int64_t now = NowNs();
  std::string line = phase_;
  if (total_ > 0) {
    const int pct = static_cast<int>(100.0 * done_ / total_);
    char bar[64];
    const int width = 20, filled = pct * width / 100;
    std::snprintf(bar, sizeof bar, " [%.*s%*s] %3d%% (%d/%d)", filled, "####################",
                  width - filled, "", pct, done_, total_);
    line += bar;
    if (done_ > 0 && done_ < total_) {
      const double per = (now - phase_start_ns_) / 1e9 / done_;
      line += ", ETA " + Duration(per * (total_ - done_));
    }
  }
  if (!detail_.empty()) line += ": " + detail_;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else if (force || (now - last_line_ns_) / 1e9 >= interval_s_) {
    std::fprintf(stderr, "opscope: %s (%s so far)\n", line.c_str(),
                 Duration((now - started_ns_) / 1e9).c_str());
    last_line_ns_ = now;
  }
}

void Progress::Finish() {
  if (terminal_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
  enabled_ = false;
}

ReadingProgress::ReadingProgress(const std::string& file) : file_(file) {
  importers::SetReadProgress([this](size_t done, size_t total) {
    const int mb_total = static_cast<int>(total >> 20), mb_done = static_cast<int>(done >> 20);
    if (mb_total < 1) return;
    if (!started_) {
      progress_.Phase("reading " + file_ + " (MB)", mb_total);
      started_ = true;
    }
    progress_.Update(mb_done);
  });
}

ReadingProgress::~ReadingProgress() {
  importers::SetReadProgress(nullptr);
  progress_.Finish();
}

}  // namespace opscope::cli
