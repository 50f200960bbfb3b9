// The versions of the libraries the engine runs on, for `opscope --version`.
#pragma once

#include <string>

namespace opscope::engine {

// oneDNN as loaded at run time (dnnl_version()): "2.7.3 (commit 7710ed5..., cpu runtime OMP)".
std::string OneDnnVersion();
// libonnx, as its headers say (onnx::LAST_RELEASE_VERSION).
std::string OnnxVersion();

}  // namespace opscope::engine
