#include "sections/memory/memory_engine.h"

#include <cstdio>
#include <cstring>

namespace opscope::memory {

namespace {
const char* PlaceName(engine::TensorLifetime::Place p) {
  switch (p) {
    case engine::TensorLifetime::Place::kArena:
      return "arena";
    case engine::TensorLifetime::Place::kInput:
      return "input";
    case engine::TensorLifetime::Place::kOutput:
      return "output";
    case engine::TensorLifetime::Place::kHeap:
      break;
  }
  return "heap";
}
}  // namespace

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kb) == 1) m.rss_bytes = static_cast<double>(kb) * 1024;
    if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1)
      m.peak_rss_bytes = static_cast<double>(kb) * 1024;
  }
  std::fclose(f);
  return m;
}

MemorySection FromSession(const engine::Session& session) {
  MemorySection m;
  const engine::MemoryMap map = session.Memory();
  const auto& steps = session.Steps();
  const auto& nodes = session.Nodes();
  // Engine step index -> index among the steps a run executes.
  std::vector<int> compact(steps.size(), -1);
  for (size_t s = 0; s < steps.size() && s < map.step_active.size(); ++s) {
    if (!map.step_active[s] || steps[s].nodes.empty()) continue;
    compact[s] = static_cast<int>(m.steps.size());
    MemStep ms;
    ms.name = steps[s].name;
    ms.op = steps[s].nodes[0];
    ms.weight_bytes = static_cast<double>(map.steps[s].weight_bytes);
    ms.packed_weight_bytes = static_cast<double>(map.steps[s].packed_weight_bytes);
    ms.workspace_bytes = static_cast<double>(map.steps[s].workspace_bytes);
    m.packed_weight_bytes += ms.packed_weight_bytes;
    m.workspace_bytes += ms.workspace_bytes;
    m.steps.push_back(std::move(ms));
  }
  auto node_name = [&](int n) {
    return n >= 0 && n < static_cast<int>(nodes.size()) ? nodes[static_cast<size_t>(n)].name
                                                        : std::string();
  };
  for (const engine::TensorLifetime& t : map.tensors) {
    if (t.first_step < 0 || t.last_step < 0 || t.first_step >= static_cast<int>(compact.size()) ||
        t.last_step >= static_cast<int>(compact.size()))
      continue;
    const int a = compact[static_cast<size_t>(t.first_step)];
    const int b = compact[static_cast<size_t>(t.last_step)];
    if (a < 0 || b < 0) continue;
    LiveTensor lt;
    lt.name = t.name;
    lt.shape = t.shape;
    lt.dtype = engine::DataTypeName(t.dtype);
    lt.bytes = static_cast<double>(t.bytes);
    lt.place = PlaceName(t.place);
    lt.first_step = a;
    lt.last_step = b;
    lt.producer = node_name(t.producer);
    lt.last_consumer = node_name(t.last_consumer);
    m.tensors.push_back(std::move(lt));
  }
  m.arena_bytes = static_cast<double>(map.arena_bytes);
  m.naive_bytes = static_cast<double>(map.naive_bytes);
  m.weight_bytes = static_cast<double>(map.weight_bytes);
  Derive(&m);
  return m;
}

}  // namespace opscope::memory
