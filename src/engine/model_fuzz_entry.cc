#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "engine/model_fuzz.h"
#include "opscope/engine.h"

namespace opscope::engine {

void FuzzLoadModel(const uint8_t* data, size_t size) {
  int fd = memfd_create("opscope_fuzz_model", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t off = 0;
  while (off < size) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::Load(path, opt);
  (void)s;
  close(fd);
}

}  // namespace opscope::engine
