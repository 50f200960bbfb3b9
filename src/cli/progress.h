// Progress of long work on stderr: the phase (loading, planning, warm-up, measuring, writing),
// done/total and an ETA. On a terminal, one line redrawn in place and cleared at the end; when
// stderr is not a terminal (a CI log), a plain line at most every few seconds
// ($OPSCOPE_PROGRESS_SECONDS, default 5), so short work prints nothing and long work shows it is
// alive. Silent with -q.
#pragma once

#include <cstdint>
#include <string>

namespace opscope::cli {

class Progress {
 public:
  Progress();
  ~Progress();
  // A new phase; `total` 0 when its size is unknown (loading).
  void Phase(const std::string& name, int total = 0);
  // `detail`: what is being done now ("peak int8, all cores"), shown after the counts.
  void Update(int done, const std::string& detail = "");
  void Finish();

  // "12.3 s", "2 min 5 s": the ETA's words (tested alone).
  static std::string Duration(double seconds);

 private:
  void Draw(bool force);

  bool terminal_ = false, enabled_ = false, drawn_ = false;
  double interval_s_ = 5;
  std::string phase_, detail_;
  int total_ = 0, done_ = 0;
  int64_t phase_start_ns_ = 0, last_line_ns_ = 0, started_ns_ = 0;
};

// While it lives, the streaming readers' progress through a file (importers::SetReadProgress)
// is shown as the phase "reading FILE", in MB.
class ReadingProgress {
 public:
  explicit ReadingProgress(const std::string& file);
  ~ReadingProgress();

 private:
  Progress progress_;
  std::string file_;
  bool started_ = false;
};

}  // namespace opscope::cli
