// The name opscope gives an ONNX node: its own, or "<op_type>_<index>" (its position in its graph)
// when the model leaves it empty (engine.h NodeInfo::name). The one rule for the engine, its load
// checks and the importers' model join, so every profile names an unnamed node the same way.
#pragma once

#include <string>

namespace opscope::engine {

inline std::string NodeName(const std::string& name, const std::string& op_type, long index) {
  return name.empty() ? op_type + "_" + std::to_string(index) : name;
}

}  // namespace opscope::engine
