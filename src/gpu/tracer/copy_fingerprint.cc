#include "gpu/tracer/copy_fingerprint.h"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "gpu/trace_format.h"

namespace opscope::gpu::tracer {
namespace {

uint64_t Mix(uint64_t h, const unsigned char* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

}  // namespace

uint64_t FingerprintHostBytes(const void* src, uint64_t bytes, bool* sampled, int* error) {
  constexpr size_t kChunk = 64 * 1024;
  constexpr uint32_t kBlocksPerRead = kChunk / trace::kSampleBlockBytes;
  static thread_local unsigned char block[kChunk];
  const pid_t self = getpid();
  const char* base = static_cast<const char*>(src);
  uint64_t h = 0xCBF29CE484222325ull ^ bytes;
  *error = 0;
  // One system call reads up to kChunk bytes, gathered from up to kBlocksPerRead places.
  auto read = [&](const iovec* remote, unsigned long count, size_t n) -> bool {
    iovec local{block, n};
    ssize_t got = process_vm_readv(self, &local, 1, remote, count, 0);
    if (got != static_cast<ssize_t>(n)) {
      *error = got < 0 ? errno : EFAULT;
      return false;
    }
    h = Mix(h, block, n);
    return true;
  };
  *sampled = bytes > trace::kFullHashBytes;
  if (!*sampled) {
    for (uint64_t off = 0; off < bytes; off += kChunk) {
      size_t n = static_cast<size_t>(bytes - off < kChunk ? bytes - off : kChunk);
      iovec remote{const_cast<char*>(base + off), n};
      if (!read(&remote, 1, n)) return 0;
    }
  } else {
    const uint64_t stride = bytes / trace::kSampleBlocks;
    iovec remote[kBlocksPerRead];
    for (uint32_t first = 0; first < trace::kSampleBlocks; first += kBlocksPerRead) {
      for (uint32_t i = 0; i < kBlocksPerRead; ++i)
        remote[i] = iovec{const_cast<char*>(base + (first + i) * stride), trace::kSampleBlockBytes};
      if (!read(remote, kBlocksPerRead, kChunk)) return 0;
    }
  }
  return h ? h : 1;
}

}  // namespace opscope::gpu::tracer
