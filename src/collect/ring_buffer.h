// The perf_event mmap ring, read by one consumer.
//
// Contract (include/uapi/linux/perf_event.h): the kernel writes records at data_head and never
// overtakes data_tail. The consumer loads data_head with acquire semantics (so the record bytes
// are visible before we read them), copies records out, then stores data_tail with release
// semantics (so the kernel does not reuse the space before we are done). A record that wraps
// around the end of the buffer is copied into a bounce buffer so callers always see contiguous
// bytes. Records the kernel had to drop arrive as PERF_RECORD_LOST, which callers count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

struct perf_event_header;

namespace opscope::collect {

class PerfRing {
 public:
  PerfRing() = default;
  PerfRing(const PerfRing&) = delete;
  PerfRing& operator=(const PerfRing&) = delete;
  PerfRing(PerfRing&& o) noexcept;
  PerfRing& operator=(PerfRing&& o) noexcept;
  ~PerfRing();

  // Maps 1 + data_pages pages of `fd` (data_pages a power of two).
  Status Map(int fd, size_t data_pages);
  // Calls `fn` for every complete record between tail and head, then releases them.
  // Returns the number of records read.
  size_t Drain(const std::function<void(const perf_event_header*)>& fn);
  bool mapped() const { return base_ != nullptr; }

  // For tests: attach to caller-provided memory laid out like a perf mmap (one metadata page,
  // then `data_size` bytes of data).
  void AttachForTest(void* base, size_t page_size, size_t data_size);

 private:
  void Reset();
  void* base_ = nullptr;
  size_t map_len_ = 0;
  size_t page_size_ = 0;
  size_t data_size_ = 0;
  bool owned_ = false;
  std::string bounce_;
};

}  // namespace opscope::collect
