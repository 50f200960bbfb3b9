// The memory layout of a channels-last region's activations (SessionImpl::AssignChannelsLast).
//
// A 4-D float activation inside a region keeps its logical NCHW shape and is stored either NHWC
// or in oneDNN's blocked nChw8c layout ([N, C/8, H, W, 8]: eight channels innermost). Which one
// depends on the CPU and on C alone, so the step that writes a value and every step that reads it
// agree without being told: on x86 CPUs whose oneDNN ISA is below AVX-512 (AVX2, SSE4.1) the direct
// convolution kernels (jit:avx2) are written for nChw8c and refuse NHWC for many shapes (then a
// reorder runs on each side of the convolution), so a value whose C is a multiple of 8 is stored
// nChw8c there; elsewhere, and for other channel counts, NHWC. With C a multiple of 8 the
// blocked layout has no padding: the same number of elements, so an elementwise step still runs
// on the bytes as they are, and an nChw8c tensor is N*C/8 NHWC images of 8 channels each to the
// hand-written kernels (pools, resizes, per-channel broadcasts).
#pragma once

#include <cstdint>
#include <optional>

namespace opscope::engine {

enum class RegionLayout { kNhwc, kNChw8c };

// The layout a region value with `channels` channels is stored in on this CPU. The environment
// variable OPSCOPE_REGION_LAYOUT=nhwc or =nchw8c (read once) overrides the CPU's choice, for
// side-by-side measurements; nChw8c still applies only to channel counts that are multiples of 8.
RegionLayout RegionLayoutFor(int64_t channels);
// "NHWC" or "nChw8c".
const char* RegionLayoutName(RegionLayout layout);

// Tests: force one choice for every later call (nullopt: back to the CPU's/environment's).
void SetRegionLayoutForTesting(std::optional<RegionLayout> forced);

}  // namespace opscope::engine
