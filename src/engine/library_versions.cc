#include "engine/library_versions.h"

#include <oneapi/dnnl/dnnl.h>
#include <onnx/common/version.h>

#include <string>

namespace opscope::engine {

std::string OneDnnVersion() {
  const dnnl_version_t* v = dnnl_version();
  if (v == nullptr) return "unknown";
  std::string s =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  if (v->hash && v->hash[0] && std::string(v->hash) != "N/A")
    s += std::string(" (commit ") + v->hash + ")";
  return s;
}

std::string OnnxVersion() { return ONNX_NAMESPACE::LAST_RELEASE_VERSION; }

}  // namespace opscope::engine
