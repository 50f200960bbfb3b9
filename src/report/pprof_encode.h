// pprof output: a perftools.profiles.Profile (report/profile.proto, pprof's published schema)
// built with the protobuf classes protoc generates from it, serialized by libprotobuf and gzipped,
// so `go tool pprof` and continuous-profiling services (Pyroscope, Parca, Cloud Profiler) read
// opscope profiles.
//
// Mapping to profile.proto: sample types are {samples, count} and {cpu, nanoseconds} (or
// {cycles, count}); one Location per distinct (mapping, address, inline chain) whose Line list
// holds the chain innermost first; one Function per (name, module, file); one Mapping per module,
// the main binary first (pprof prints the first Mapping as the profile's "File:"): the command's
// program, else the module of `main`, else the module most stacks start in. Samples carry "thread"
// (string) and "tid" (number) labels, and "op" when attributed to an operator.
//
// Op stacks (profiles without samples, report/op_stacks.h): one Mapping, the model file; each
// frame's Function is named by its full scope path and the leaf by the full node name, so
// `pprof -top` keeps "backbone.conv1" and "bev_encoder.conv1" apart; samples carry "op" and
// "op_type" labels.
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
