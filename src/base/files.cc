#include "base/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"

namespace opscope {

StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFound(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return PermissionDenied(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss(path + ": read error");
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  return WriteFileAtomicStreamed(path, [&](std::ostream& out) {
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  });
}

Status WriteFileAtomicStreamed(const std::string& path,
                               const std::function<void(std::ostream&)>& fill) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return PermissionDenied(path + ": cannot write: " + std::strerror(errno));
    fill(out);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return ResourceExhausted(path + ": write failed: " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return PermissionDenied(path + ": cannot rename into place: " + err);
  }
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) return InvalidArgument(path + ": is a directory, expected a file");
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return NotFound(path + ": folder '" + dir.string() + "' does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    return PermissionDenied(path + ": folder '" + dir.string() + "' is not writable");
  if (fs::exists(p, ec) && access(p.c_str(), W_OK) != 0)
    return PermissionDenied(path + ": file exists and is not writable");
  return Status::Ok();
}

std::string ReadSysFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return Trim(ss.str());
}

}  // namespace opscope
