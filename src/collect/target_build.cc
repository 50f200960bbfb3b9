#include "collect/target_build.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"

namespace opscope::collect {

StatusOr<std::string> ResolveExecutable(const std::string& argv0) {
  if (argv0.empty()) return InvalidArgument("empty command");
  if (argv0.find('/') != std::string::npos) {
    if (access(argv0.c_str(), X_OK) != 0) return NotFound(argv0 + ": " + std::strerror(errno));
    return argv0;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& dir : Split(p, ':', true)) {
    std::string cand = dir + "/" + argv0;
    struct stat st;
    if (stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(cand.c_str(), X_OK) == 0)
      return cand;
  }
  return NotFound("command '" + argv0 + "' not found on PATH (" + p + ")");
}

StatusOr<std::vector<std::string>> ReadDwarfProducers(const std::string& path, int max_units) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": " + std::strerror(errno));
  char magic[4] = {0, 0, 0, 0};
  if (pread(fd, magic, 4, 0) != 4 || std::memcmp(magic,
                                                 "\x7f"
                                                 "ELF",
                                                 4) != 0) {
    close(fd);
    return Unsupported(path + ": not an ELF binary (a script or wrapper?): build type not checked");
  }
  std::vector<std::string> out;
  Dwarf* dw = dwarf_begin(fd, DWARF_C_READ);
  if (dw == nullptr) {  // ELF without DWARF: stripped or built without -g
    close(fd);
    return out;
  }
  Dwarf_Off off = 0, next = 0;
  size_t header_size = 0;
  int units = 0;
  while (units < max_units &&
         dwarf_nextcu(dw, off, &next, &header_size, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die die;
    if (dwarf_offdie(dw, off + header_size, &die) != nullptr) {
      Dwarf_Attribute attr;
      if (dwarf_attr(&die, DW_AT_producer, &attr) != nullptr) {
        const char* s = dwarf_formstring(&attr);
        if (s != nullptr && std::find(out.begin(), out.end(), s) == out.end()) out.emplace_back(s);
      }
    }
    off = next;
    ++units;
  }
  dwarf_end(dw);
  close(fd);
  return out;
}

}  // namespace opscope::collect
