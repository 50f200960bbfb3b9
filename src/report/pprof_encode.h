// pprof output: the profile.proto message (github.com/google/pprof/proto/profile.proto), encoded
// by hand in the protobuf wire format and gzipped, so `go tool pprof` and continuous-profiling
// services (Pyroscope, Parca, Cloud Profiler) read opscope profiles.
//
// Mapping to profile.proto: sample types are {samples, count} and {cpu, nanoseconds} (or
// {cycles, count}); one Location per distinct (module, address) whose Line list holds the inline
// chain innermost first; one Function per (name, module, file); one Mapping per module. Samples
// carry "thread" (string) and "tid" (number) labels, and "op" when attributed to an operator.
#pragma once

#include <string>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::report {

// The uncompressed profile.proto bytes.
std::string EncodePprof(const profile::Profile& p);
// Gzipped (what `pprof` files are).
StatusOr<std::string> RenderPprof(const profile::Profile& p);

// gzip / gunzip with zlib (used by the pprof writer and its tests).
StatusOr<std::string> Gzip(const std::string& data);
StatusOr<std::string> Gunzip(const std::string& data);

}  // namespace opscope::report
