// The attach request opscope places in a program's channel (`run -p`, range_attach.cc) and the
// recorder inside the program reads (ranges_recorder.cc): a few text lines,
//
//   opscope-attach 1
//   opscope-pid <opscope's pid>
//   out <absolute path of the output folder>
//   cpu 0|1
//
// Parsed strictly by one function both sides' tests and the attach_request_fuzz target use: a
// pid must be all digits and a real pid (1..INT_MAX; `opscope-pid 4294967295` became pid_t -1,
// and kill(-1, 0) then said opscope was alive forever), the folder an absolute path without NUL.
// Header-only and libc/libstdc++-only: the recorder libraries link nothing else.
#pragma once

#include <climits>
#include <string>
#include <string_view>

namespace opscope::collect {

struct AttachRequest {
  bool magic = false;     // "opscope-attach 1" seen
  long opscope_pid = 0;   // 0 when absent or not a valid pid
  std::string out;        // the output folder
  bool cpu = true;        // "cpu 0": no per-range CPU time
  bool bad_line = false;  // a known key with a malformed value

  // What the recorder obeys: the magic line, an absolute folder, a valid pid.
  bool Valid() const {
    return magic && !bad_line && !out.empty() && out[0] == '/' && opscope_pid > 0;
  }
};

inline AttachRequest ParseAttachRequest(std::string_view text) {
  AttachRequest r;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "opscope-attach 1") {
      r.magic = true;
    } else if (line.substr(0, 4) == "out ") {
      const std::string_view path = line.substr(4);
      if (path.find('\0') != std::string_view::npos) r.bad_line = true;
      r.out = std::string(path);
    } else if (line.substr(0, 12) == "opscope-pid ") {
      const std::string_view digits = line.substr(12);
      long v = 0;
      bool ok = !digits.empty() && digits.size() <= 10;
      for (char c : digits) {
        if (c < '0' || c > '9') ok = false;
        if (ok) v = v * 10 + (c - '0');
      }
      if (!ok || v <= 0 || v > INT_MAX) {
        r.bad_line = true;
        v = 0;
      }
      r.opscope_pid = v;
    } else if (line == "cpu 0") {
      r.cpu = false;
    }
  }
  return r;
}

}  // namespace opscope::collect
