// The memory section: where a model's memory goes, step by step (issue: per-op memory, the peak
// and what is alive at it). Made the typed way (profile/section_data.h): this folder holds its
// data and JSON (memory_section.cc), how the engine fills it (memory_engine.cc), its renderers
// (memory_report.cc: table, CSV, HTML block, timeline counter track) and its findings
// (memory_rules.cc). docs/profile-format.md documents the JSON; docs/sections.md the recipe.
//
// Bytes are doubles (exact to 2^53) like every byte count of the profile. Steps are the steps a
// run executes, in order; tensor lifetimes are indices into them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/section_data.h"

namespace opscope::memory {

// One activation tensor: a graph input, a graph output, or an intermediate value (a view shares
// its source's memory and is not listed).
struct LiveTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;  // "float32", ...
  double bytes = 0;
  // "arena" (planned: its memory is a slice of the activation arena), "heap" (dynamic shape,
  // allocated per run), "input" (the caller's), "output" (kept after the run).
  std::string place;
  int first_step = 0;         // the step that writes it (the first step for an input)
  int last_step = 0;          // the last step that reads it (the last step for an output)
  std::string producer;       // node that writes it, "" for a graph input
  std::string last_consumer;  // node that reads it last, "" when none does
};

struct MemStep {
  std::string name;  // the step: its anchor node's name (OpRecord::step of fused members)
  int op = -1;       // index into Profile::ops of the anchor, -1 when not there
  // Activations, from the tensors' lifetimes (Derive): bytes of the tensors it writes, bytes of
  // those whose last reader it is (free after it), and bytes alive while it runs (its inputs,
  // its outputs and everything written before and read after it), of which in the arena.
  double allocated_bytes = 0;
  double released_bytes = 0;
  double live_bytes = 0;
  double arena_live_bytes = 0;
  // Its own memory: the constants it reads, its kernel's copies of them (prepacked weights),
  // its kernel's buffers (reorders, scratch).
  double weight_bytes = 0;
  double packed_weight_bytes = 0;
  double workspace_bytes = 0;
};

struct MemorySection final : profile::SectionData {
  static constexpr char kKey[] = "memory";

  // Whose memory and how it was measured: "" for opscope's engine (the host process, from the
  // planner's buffers); an importer names its device ("cuda:0", "cpu") and its source
  // ("PyTorch profiler [memory] events").
  std::string device;
  std::string source;
  std::vector<MemStep> steps;
  std::vector<LiveTensor> tensors;
  int peak_step = -1;  // the step with the most live bytes (the first of equals); -1: no steps
  double peak_live_bytes = 0;
  double arena_bytes = 0;          // the activation arena as planned
  double naive_bytes = 0;          // its tensors, one buffer each (no reuse)
  double weight_bytes = 0;         // the model's constants the run reads, each counted once
  double packed_weight_bytes = 0;  // sum of the steps' packed copies
  double workspace_bytes = 0;      // sum of the steps' workspaces
  // The process, read when the profile is complete, before it is written (/proc/self/status
  // VmRSS and VmHWM): what the model's memory above leaves to the allocator, the libraries and
  // the threads. 0: unknown.
  double rss_bytes = 0;
  double peak_rss_bytes = 0;

  std::unique_ptr<profile::SectionData> Clone() const override;
  void ToJson(nlohmann::json& j) const override;
  Status Validate(const profile::Profile& p) const override;
};

// Fills every step's allocated, released, live and arena-live bytes and the peak from `tensors`
// (whose step indices must be in range).
void Derive(MemorySection* m);
// The peak from the steps' live bytes (the first of equals): for sources that know live bytes
// per step but no tensors (importers).
void SetPeak(MemorySection* m);

// The tensors alive during `step`, largest first (indices into m.tensors).
std::vector<int> AliveAt(const MemorySection& m, int step);

}  // namespace opscope::memory
