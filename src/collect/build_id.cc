#include "collect/build_id.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace opscope::collect {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// The build id among the notes of one data block, or "".
std::string FindInNotes(Elf_Data* data) {
  size_t offset = 0, name_at = 0, desc_at = 0;
  GElf_Nhdr nhdr;
  while (data && offset < data->d_size &&
         (offset = gelf_getnote(data, offset, &nhdr, &name_at, &desc_at)) > 0) {
    const auto* base = static_cast<const unsigned char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof(ELF_NOTE_GNU) &&
        std::memcmp(base + name_at, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0 && nhdr.n_descsz > 0)
      return Hex(base + desc_at, nhdr.n_descsz);
  }
  return "";
}

}  // namespace

StatusOr<std::string> ReadGnuBuildId(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return NotFound(path + ": " + std::strerror(errno) + " (no build id read)");
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(path + ": not a regular file, so not an ELF binary");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": " + std::strerror(errno) + " (no build id read)");
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    return InvalidArgument(path + ": not an ELF file (no build id)");
  }
  std::string id;
  // Section headers first (`.note.gnu.build-id` or any other note section), then the program
  // headers' PT_NOTE segments for files without section headers.
  Elf_Scn* scn = nullptr;
  while (id.empty() && (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
      id = FindInNotes(elf_getdata(scn, nullptr));
  }
  size_t phnum = 0;
  if (id.empty() && elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum && id.empty(); ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_NOTE)
        id = FindInNotes(elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset),
                                              phdr.p_filesz, ELF_T_NHDR));
    }
  }
  elf_end(elf);
  close(fd);
  if (id.empty()) return NotFound(path + ": no GNU build-id note (linked with --build-id=none?)");
  return id;
}

}  // namespace opscope::collect
