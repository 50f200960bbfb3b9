// opscope's own files as entries of the importer registry, so one loader (LoadProfileFile) reads
// every profile file by what its bytes say, as Perfetto's trace-type registry does:
// - "opscope": the JSON profile (docs/profile-format.md), recognised by its schema, parsed as it
//   is read from the mapped file;
// - "opscope-record": the record file of `opscope record` (magic "OPSREC"), read by
//   collect/record_file.h from its path and symbolized (a file too short to hold the magic but
//   starting like it is claimed too, so its error is the record reader's).
#include <unistd.h>

#include <cstring>

#include "collect/symbolize.h"
#include "importers/importer.h"
#include "profile/profile_io.h"

namespace opscope::importers {
namespace {

constexpr std::string_view kMagic = "OPSREC";

int SniffJson(std::string_view head, const std::string&) {
  const size_t at = head.find("\"schema\"");
  if (at == std::string_view::npos) return kSniffNo;
  return head.find("\"opscope.profile/", at) != std::string_view::npos ? kSniffCertain : kSniffNo;
}

StatusOr<profile::Profile> ParseJson(const Source& src) {
  return profile::FromJsonBytes(src.bytes(), src.origin(), [&](size_t n) { src.ReleaseBefore(n); });
}

int SniffRecord(std::string_view head, const std::string&) {
  if (head.substr(0, kMagic.size()) == kMagic) return kSniffCertain;
  if (!head.empty() && head.size() < kMagic.size() && kMagic.substr(0, head.size()) == head)
    return kSniffCertain;
  return kSniffNo;
}

StatusOr<profile::Profile> ParseRecord(const Source& src) {
  // The record reader reads (and re-reads) the file by its path.
  if (::access(src.origin().c_str(), R_OK) != 0)
    return Unsupported(src.origin() + ": a record file is read from its file, not from bytes");
  return collect::LoadRecording(src.origin());
}

}  // namespace

namespace formats {
extern const Format kFormat_opscope = {"opscope",
                                       "opscope's JSON profile (any command's -o x.json)",
                                       SniffJson, ParseJson, /*native=*/true};
extern const Format kFormat_opscope_record = {
    "opscope-record", "opscope's record file (opscope record -o x.rec)", SniffRecord, ParseRecord,
    /*native=*/true};
}  // namespace formats

}  // namespace opscope::importers
