#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "base/files.h"
#include "collect/record_file.h"
#include "collect/symbolize.h"
#include "profile/profile_io.h"

namespace opscope::collect {

StatusOr<profile::Profile> LoadRecording(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(RecordReader reader, RecordReader::Open(path));
  profile::Profile p;
  const RecordMeta& m = reader.meta();
  p.meta.kind = "record";
  p.meta.source = m.command;
  p.meta.created = m.created;
  p.meta.host = m.host;
  p.meta.kernel = m.kernel;
  p.meta.arch = m.arch;
  p.meta.cpu_model = m.cpu_model;
  p.meta.logical_cpus = m.logical_cpus;
  p.meta.degradations = m.degradations;
  if (reader.end()) {
    p.meta.extra["exit"] = reader.end()->exit;
  } else {
    p.meta.degradations.push_back(
        "the recording did not finish (opscope was killed?): "
        "what was written before is shown");
  }
  if (reader.symbolized()) {
    p.samples = std::move(*reader.symbolized());
  } else {
    OPSCOPE_ASSIGN_OR_RETURN(profile::SampleSection s, Symbolize(reader));
    s.warnings.insert(s.warnings.begin(),
                      "symbolized at report time (the recording has no symbol "
                      "chunk): frames reflect the binaries on disk now");
    p.samples = std::move(s);
  }
  if (reader.bytes_dropped() && reader.symbolized())
    p.samples->warnings.push_back("record file has " + std::to_string(reader.bytes_dropped()) +
                                  " unusable bytes at its end (" + reader.drop_reason() + ")");
  // Damage in the middle of the file (chunks skipped, the rest read): first, since it explains
  // any samples that are missing.
  p.samples->warnings.insert(p.samples->warnings.begin(), reader.problems().begin(),
                             reader.problems().end());
  OPSCOPE_RETURN_IF_ERROR(profile::Validate(p).WithPrefix(path));
  return p;
}

}  // namespace opscope::collect
