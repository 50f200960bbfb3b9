// The sampling section: call-stack samples from `opscope record` or `opscope profile --sample`.
//
// Frames are interned: a sample's stack is a list of indices into `frames`, leaf first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace opscope::profile {

struct Frame {
  std::string function;  // demangled; "[unknown]" if it could not be symbolized
  std::string module;    // basename of the ELF file or "[jit]", "[kernel]"
  std::string file;      // source file, "" if no debug info
  int line = 0;
  uint64_t address = 0;  // module-relative address
  bool inlined = false;  // an inlined frame reconstructed from debug info
};

// A sampled ELF file: what Frame::module names (its basename), where it was when recorded, and its
// GNU build id (hex, "" when it has none). pprof's Mapping gets the path and build id, so
// `pprof -symbolize` and debuginfod can find the binary; the other formats show the basename.
// Profiles written before these were recorded have no modules (and still load).
struct Module {
  std::string name;      // == Frame::module of its frames
  std::string path;      // absolute path at recording time
  std::string build_id;  // lowercase hex of NT_GNU_BUILD_ID, "" if none
};

struct Sample {
  std::vector<uint32_t> stack;  // indices into frames, leaf first
  int32_t pid = 0, tid = 0;
  int64_t time_ns = 0;
  double weight = 1;  // period in `unit` (ns of cpu-clock, or cycles)
  int32_t op = -1;    // index into Profile::ops executing at that time, -1 if none
};

struct SampleSection {
  std::string event;       // "cycles" or "cpu-clock"
  std::string unit;        // "ns" or "cycles"
  std::string call_graph;  // "fp" or "dwarf"
  double frequency_hz = 0;
  uint64_t lost = 0;  // samples lost in ring-buffer overflow (PERF_RECORD_LOST)
  std::vector<Frame> frames;
  std::vector<Sample> samples;
  std::map<int32_t, std::string> thread_names;  // tid -> comm
  std::vector<std::string> warnings;            // missing debug info, unreadable maps, ...
  std::vector<Module> modules;  // the ELF files frames are in, by name (first path wins)
};

}  // namespace opscope::profile
