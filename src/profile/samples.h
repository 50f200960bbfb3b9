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
  std::string function;   // demangled; "[unknown]" if it could not be symbolized
  std::string module;     // basename of the ELF file or "[jit]", "[kernel]"
  std::string file;       // source file, "" if no debug info
  int line = 0;
  uint64_t address = 0;   // module-relative address
  bool inlined = false;   // an inlined frame reconstructed from debug info
};

struct Sample {
  std::vector<uint32_t> stack;  // indices into frames, leaf first
  int32_t pid = 0, tid = 0;
  int64_t time_ns = 0;
  double weight = 1;            // period in `unit` (ns of cpu-clock, or cycles)
  int32_t op = -1;              // index into Profile::ops executing at that time, -1 if none
};

struct SampleSection {
  std::string event;            // "cycles" or "cpu-clock"
  std::string unit;             // "ns" or "cycles"
  std::string call_graph;       // "fp" or "dwarf"
  double frequency_hz = 0;
  uint64_t lost = 0;            // samples lost in ring-buffer overflow (PERF_RECORD_LOST)
  std::vector<Frame> frames;
  std::vector<Sample> samples;
  std::map<int32_t, std::string> thread_names;  // tid -> comm
  std::vector<std::string> warnings;            // missing debug info, unreadable maps, ...
};

}  // namespace opscope::profile
