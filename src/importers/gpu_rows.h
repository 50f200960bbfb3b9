// What nvprof's and `nsys stats`' CSV reports have in common: activity names
// ("[CUDA memcpy HtoD]", "[CUDA memset]", or a kernel's name) and per-name summary rows.
#pragma once

#include <string>
#include <utility>

#include "base/strings.h"
#include "profile/profile.h"

namespace opscope::importers {

// "memcpy", "memset" or "kernel".
inline const char* GpuActivityType(const std::string& name) {
  return StartsWith(name, "[CUDA memcpy")   ? "memcpy"
         : StartsWith(name, "[CUDA memset") ? "memset"
                                            : "kernel";
}

// The copy direction of a "[CUDA memcpy ...]" name: "HtoD" (older spelling) or "Host-to-Device"
// (nsys 2023+) both give "HtoD"; "other" when the name names none.
inline std::string CopyKindFromName(const std::string& name) {
  const std::pair<const char*, const char*> kinds[] = {{"HtoD", "Host-to-Device"},
                                                       {"DtoH", "Device-to-Host"},
                                                       {"DtoD", "Device-to-Device"},
                                                       {"HtoH", "Host-to-Host"},
                                                       {"PtoP", "Peer-to-Peer"}};
  std::string kind;
  for (const auto& [k, longer] : kinds)
    if (name.find(k) != std::string::npos || name.find(longer) != std::string::npos) kind = k;
  return kind.empty() ? "other" : kind;
}

// One summary row (a total over the capture, no runs) as an op of the profile.
inline profile::OpRecord GpuTotalOp(const std::string& name, int index, double total_ms,
                                    std::string attribution) {
  profile::OpRecord op;
  op.name = name;
  op.op_type = GpuActivityType(name);
  op.index = index;
  op.runs_ms = {total_ms};
  op.step = name;
  op.attribution = std::move(attribution);
  return op;
}

}  // namespace opscope::importers
