// The fuzzing entry point for model loading and graph building: any bytes in, a Status out,
// never a crash. Shared by the libFuzzer target (model_fuzz.cc, OPSCOPE_FUZZ builds) and the
// corpus-mutation test that runs in every build (model_fuzz_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace opscope::engine {
// Loads the model; when that succeeds and its planned work is small, fills random inputs and
// runs it once.
void FuzzLoadModel(const uint8_t* data, size_t size);
}  // namespace opscope::engine
