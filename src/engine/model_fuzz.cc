// libFuzzer target: cmake --preset fuzz && cmake --build --preset fuzz --target model_fuzz
//   build/fuzz/src/engine/model_fuzz -max_len=200000 corpus/   (seed with models/*.onnx)
#include "engine/model_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  opscope::engine::FuzzLoadModel(data, size);
  return 0;
}
