// Fingerprints of the host bytes a host-to-device copy is about to send (see CopyContentRecord
// in gpu/trace_format.h): whole up to kFullHashBytes, kSampleBlocks evenly spaced blocks above.
#pragma once

#include <cstdint>

namespace opscope::gpu::tracer {

// Reads `bytes` at `src` through process_vm_readv on this process, so an unreadable pointer
// (a device pointer passed as host memory) yields 0 and *error = EFAULT instead of a crash.
// 0 with *error set on any failure; never 0 on success. *sampled tells which kind it is.
uint64_t FingerprintHostBytes(const void* src, uint64_t bytes, bool* sampled, int* error);

}  // namespace opscope::gpu::tracer
