#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/clock.h"
#include "base/files.h"
#include "base/strings.h"
#include "base/version.h"
#include "importers/importer.h"

namespace opscope::importers {

namespace formats {
#define OPSCOPE_IMPORTER(ident) extern const Format kFormat_##ident;
#include "importers/formats.def"
#undef OPSCOPE_IMPORTER
}  // namespace formats

const std::vector<const Format*>& AllFormats() {
  static const std::vector<const Format*> all = {
#define OPSCOPE_IMPORTER(ident) &formats::kFormat_##ident,
#include "importers/formats.def"
#undef OPSCOPE_IMPORTER
  };
  return all;
}

const Format* FindFormat(std::string_view name) {
  for (const Format* f : AllFormats())
    if (name == f->name) return f;
  return nullptr;
}

std::string FormatNames() {
  std::vector<std::string> names;
  for (const Format* f : AllFormats()) names.push_back(f->name);
  return Join(names, ", ");
}

StatusOr<const Format*> Detect(std::string_view head, const std::string& path) {
  const Format* best = nullptr;
  int best_conf = 0;
  std::vector<const Format*> tied;
  for (const Format* f : AllFormats()) {
    int c = f->sniff(head, path);
    if (c < kSniffWeak) continue;
    if (c > best_conf) {
      best = f;
      best_conf = c;
      tied.clear();
    } else if (c == best_conf) {
      tied.push_back(f);
    }
  }
  if (!best)
    return Unsupported(path + ": not a format opscope can import (known: " + FormatNames() +
                       "); if it is one of these, pass --from FORMAT");
  if (!tied.empty()) {
    std::string names = std::string(best->name);
    for (const Format* f : tied) names += std::string(" and ") + f->name;
    return Unsupported(path + ": the file looks like " + names +
                       " at once; pass --from FORMAT to say which");
  }
  return best;
}

StatusOr<profile::Profile> Import(const Source& source, const Format* format) {
  if (!format) {
    std::string_view head = source.bytes().substr(0, kSniffBytes);
    OPSCOPE_ASSIGN_OR_RETURN(format, Detect(head, source.origin()));
  }
  if (source.bytes().empty()) return DataLoss(source.origin() + ": file is empty");
  StatusOr<profile::Profile> parsed = format->parse(source);
  if (!parsed.ok() && !IsValidUtf8(source.bytes())) {
    // Runtimes write the model's node names as the bytes they are (ONNX Runtime, TensorRT), and
    // a JSON parser refuses the file for one byte that is not UTF-8: read a copy with each
    // invalid sequence replaced by U+FFFD, as every writer of opscope would show it.
    auto copy = Source::FromBytes(ToValidUtf8(source.bytes()), source.origin());
    StatusOr<profile::Profile> again = format->parse(*copy);
    if (again.ok()) {
      again->meta.degradations.push_back(
          source.origin() +
          " holds bytes that are not UTF-8 (in names): read with each invalid sequence shown as "
          "U+FFFD");
      parsed = std::move(again);
    }
  }
  if (!parsed.ok()) return parsed.status();
  profile::Profile p = std::move(*parsed);
  if (!format->native) profile::FinalizeStats(p);
  OPSCOPE_RETURN_IF_ERROR(
      profile::Validate(p).WithPrefix(source.origin() + " (" + format->name + ")"));
  return p;
}

StatusOr<profile::Profile> ImportFile(const std::string& path, const Format* format) {
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Source> src, Source::Open(path));
  return Import(*src, format);
}

StatusOr<profile::Profile> LoadProfileFile(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Source> src, Source::Open(path));
  const std::string_view bytes = src->bytes();
  if (bytes.empty()) return DataLoss(path + ": file is empty (not a profile)");
  auto f = Detect(bytes.substr(0, kSniffBytes), path);
  if (f.ok()) return Import(*src, *f);
  if (f.status().message().find("at once") != std::string::npos) return f.status();
  size_t i = 0;
  while (i < bytes.size() && i < 4096 && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && bytes[i] == '{') return Import(*src, FindFormat("opscope"));
  return Unsupported(path +
                     ": not an opscope profile (neither a record file nor a JSON profile) "
                     "nor a format opscope imports (" +
                     FormatNames() + ")");
}

// --- Source ---

StatusOr<std::unique_ptr<Source>> Source::Open(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return PermissionDenied(path + ": cannot stat: " + std::strerror(err));
  }
  std::unique_ptr<Source> s(new Source());
  s->origin_ = path;
  s->size_ = static_cast<size_t>(st.st_size);
  if (s->size_ == 0) {
    ::close(fd);
    s->data_ = s->copy_.c_str();
    s->copy_.assign(kPadding, '\0');
    s->data_ = s->copy_.data();
    return s;
  }
  // Reserve file + padding as anonymous zero pages, then map the file over the front: the
  // padding after the last byte is readable zeros even when the file ends on a page boundary.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  s->map_size_ = (s->size_ + kPadding + page - 1) / page * page;
  void* region = ::mmap(nullptr, s->map_size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) {
    ::close(fd);
    return ResourceExhausted(path + ": cannot map " + std::to_string(s->size_) +
                             " bytes: " + std::strerror(errno));
  }
  void* file = ::mmap(region, s->size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  int err = errno;
  ::close(fd);
  if (file == MAP_FAILED) {
    ::munmap(region, s->map_size_);
    return NotFound(path + ": cannot map: " + std::strerror(err));
  }
  ::madvise(region, s->size_, MADV_SEQUENTIAL);
  s->map_ = region;
  s->data_ = static_cast<const char*>(region);
  return s;
}

std::unique_ptr<Source> Source::FromBytes(std::string_view bytes, std::string origin) {
  std::unique_ptr<Source> s(new Source());
  s->origin_ = std::move(origin);
  s->copy_.reserve(bytes.size() + kPadding);
  s->copy_.assign(bytes.data(), bytes.size());
  s->copy_.append(kPadding, '\0');
  s->data_ = s->copy_.data();
  s->size_ = bytes.size();
  return s;
}

namespace {
std::function<void(size_t, size_t)>& ReadProgressHook() {
  static std::function<void(size_t, size_t)> hook;
  return hook;
}
}  // namespace

void SetReadProgress(std::function<void(size_t done, size_t total)> hook) {
  ReadProgressHook() = std::move(hook);
}

void Source::ReleaseBefore(size_t offset) const {
  if (const auto& hook = ReadProgressHook()) hook(std::min(offset, size_), size_);
  if (!map_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t upto = std::min(offset, size_) / page * page;
  if (upto <= released_) return;
  ::madvise(static_cast<char*>(map_) + released_, upto - released_, MADV_DONTNEED);
  released_ = upto;
}

Source::~Source() {
  if (map_) ::munmap(map_, map_size_);
}

// --- util ---

namespace util {

Status CheckTime(double v, const std::string& origin, const std::string& what) {
  if (!std::isfinite(v)) return DataLoss(origin + ": " + what + " is not a finite number");
  if (v < 0) return DataLoss(origin + ": " + what + " is negative (" + std::to_string(v) + ")");
  return Status::Ok();
}

profile::Profile NewProfile(const std::string& format, const std::string& origin) {
  profile::Profile p;
  p.meta.kind = "import/" + format;
  p.meta.source = origin;
  p.meta.tool_version = OPSCOPE_VERSION;
  p.meta.created = IsoTimeNow();
  p.meta.import.emplace();
  p.meta.import->format = format;
  p.meta.import->files = {origin};
  return p;
}

}  // namespace util
}  // namespace opscope::importers
