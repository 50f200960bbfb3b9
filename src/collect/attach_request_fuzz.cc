// Fuzz target for the attach request the recorder reads from its channel (attach_request.h): any
// bytes parse without crashing; what the recorder would obey has a real pid and an absolute
// folder with no NUL; and a request written back as opscope writes it parses to the same fields.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "collect/attach_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using opscope::collect::AttachRequest;
  using opscope::collect::ParseAttachRequest;
  const AttachRequest r =
      ParseAttachRequest(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!r.Valid()) return 0;
  if (r.opscope_pid <= 0 || r.opscope_pid > INT_MAX) std::abort();
  if (r.out.empty() || r.out[0] != '/' || r.out.find('\0') != std::string::npos) std::abort();
  if (r.out.find('\n') != std::string::npos) std::abort();
  // As range_attach.cc writes it.
  const std::string again = "opscope-attach 1\nopscope-pid " + std::to_string(r.opscope_pid) +
                            "\nout " + r.out + "\ncpu " + (r.cpu ? "1" : "0") + "\n";
  const AttachRequest back = ParseAttachRequest(again);
  if (!back.Valid() || back.opscope_pid != r.opscope_pid || back.out != r.out || back.cpu != r.cpu)
    std::abort();
  return 0;
}
