// Importers: other tools' profiles (ONNX Runtime, TensorRT, perf script, Nsight Systems, ...)
// turned into an ordinary Profile, so every analysis and reporter applies to them.
//
// One registry. A format is one file (or folder) under src/importers/ that defines
// `const Format kFormat_<ident>` and one line OPSCOPE_IMPORTER(<ident>) in formats.def (an
// explicit list, like analysis/rules/rules.def: a static library drops object files nobody
// references). Each format has
//   Sniff(head, path) -> confidence 0..100 that the file is this format, from its first bytes
//                        (up to kSniffBytes) — content, never the extension;
//   Parse(source)     -> the Profile, from the whole file (memory-mapped, read front to back).
// Detect() runs every sniffer: the best one wins; two formats at the same best confidence are an
// error that says so (pass --from). A parser fills `ops` (one row per foreign layer/node, with
// per-run times), `e2e`, the samples or gpu section, and meta (kind "import/<format>"); the
// registry runs FinalizeStats() and Validate() on every result. Bad input — truncated, corrupt,
// negative or NaN times — is a DataLoss/InvalidArgument status naming the file and the place.
//
// Layering: importers use profile/ (the hub) and, for the model join (model_join.h), engine/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::importers {

inline constexpr size_t kSniffBytes = 64 * 1024;
// Sniff confidences.
inline constexpr int kSniffNo = 0;
inline constexpr int kSniffWeak = 30;      // plausible (e.g. "a JSON array of objects")
inline constexpr int kSniffLikely = 70;    // the format's usual first keys/lines
inline constexpr int kSniffCertain = 100;  // a magic string only this format writes

// The bytes of one input file. `data` stays valid for the Source's lifetime and is followed by
// at least kPadding readable zero bytes (for simdjson).
class Source {
 public:
  static constexpr size_t kPadding = 64;
  // Memory-maps PATH (read-only, lazily paged: a 1 GB file is not read up front).
  static StatusOr<std::unique_ptr<Source>> Open(const std::string& path);
  // Copies BYTES (tests, fuzzers).
  static std::unique_ptr<Source> FromBytes(std::string_view bytes, std::string origin);
  ~Source();
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  std::string_view bytes() const { return {data_, size_}; }
  // Drops the mapped pages before `offset` from memory (they are re-read from the file if
  // touched again): streaming parsers call it on what they have consumed, so a 1 GB file does
  // not stay resident. A no-op for copied bytes.
  void ReleaseBefore(size_t offset) const;
  const std::string& origin() const { return origin_; }  // the path, for messages

 private:
  Source() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // mmap'ed region (file + zero padding), or null
  size_t map_size_ = 0;
  mutable size_t released_ = 0;
  std::string copy_;  // FromBytes storage
  std::string origin_;
};

struct Format {
  const char* name;         // "ort", as --from takes it
  const char* description;  // "ONNX Runtime profiler JSON (enable_profiling)"
  int (*sniff)(std::string_view head, const std::string& path);
  StatusOr<profile::Profile> (*parse)(const Source& source);
  // The parse result is opscope's own profile, already finalized and validated: Import leaves
  // its statistics as they were written (a hand-made profile may have stats without runs).
  bool native = false;
};

// Every format, in formats.def order.
const std::vector<const Format*>& AllFormats();
const Format* FindFormat(std::string_view name);
// "ort, tensorrt, perf-script, ..."
std::string FormatNames();

// The format of HEAD: the single best sniffer at kSniffWeak or more. Unsupported when none
// claims it or when two claim it equally.
StatusOr<const Format*> Detect(std::string_view head, const std::string& path);

// Parses SOURCE as FORMAT (Detect()ed when null), then FinalizeStats and Validate.
StatusOr<profile::Profile> Import(const Source& source, const Format* format);
StatusOr<profile::Profile> ImportFile(const std::string& path, const Format* format = nullptr);

// Every command that reads a profile file (report, diff, the HTML renderer) reads it here: the
// registry's sniffers decide, opscope's own formats (`opscope` JSON, `opscope-record`) being two
// of its entries. A `{` file no sniffer claims is read as an opscope profile, so its error says
// what is wrong with it; anything else names the formats it is not.
StatusOr<profile::Profile> LoadProfileFile(const std::string& path);

// How far the streaming readers (the native JSON profile, perf script, PyTorch traces) are
// through their file: called with the bytes consumed and the file's size as they release what
// they have read (Source::ReleaseBefore). One hook per process; `nullptr` removes it. The CLI
// shows it as progress.
void SetReadProgress(std::function<void(size_t done, size_t total)> hook);

// Helpers shared by format files.
namespace util {
// Checks a time read from a file: finite and not negative. `what` names it in the message.
Status CheckTime(double v, const std::string& origin, const std::string& what);
// Starts a Profile for format `name`: meta.kind "import/<name>", source, host-independent meta.
profile::Profile NewProfile(const std::string& format, const std::string& origin);
}  // namespace util

}  // namespace opscope::importers
