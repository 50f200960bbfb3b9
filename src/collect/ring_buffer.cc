#include "collect/ring_buffer.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace opscope::collect {

PerfRing::PerfRing(PerfRing&& o) noexcept { *this = std::move(o); }
PerfRing& PerfRing::operator=(PerfRing&& o) noexcept {
  if (this != &o) {
    Reset();
    base_ = std::exchange(o.base_, nullptr);
    map_len_ = o.map_len_;
    page_size_ = o.page_size_;
    data_size_ = o.data_size_;
    owned_ = o.owned_;
  }
  return *this;
}
PerfRing::~PerfRing() { Reset(); }

void PerfRing::Reset() {
  if (base_ && owned_) munmap(base_, map_len_);
  base_ = nullptr;
}

Status PerfRing::Map(int fd, size_t data_pages) {
  Reset();
  page_size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  data_size_ = data_pages * page_size_;
  map_len_ = page_size_ + data_size_;
  void* p = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    return ResourceExhausted(
        std::string("cannot map the perf ring buffer (") + std::to_string(data_pages) +
        " pages): " + std::strerror(err) +
        (err == EPERM ? "; raise kernel.perf_event_mlock_kb or run as root" : ""));
  }
  base_ = p;
  owned_ = true;
  return Status::Ok();
}

void PerfRing::AttachForTest(void* base, size_t page_size, size_t data_size) {
  Reset();
  base_ = base;
  page_size_ = page_size;
  data_size_ = data_size;
  map_len_ = page_size + data_size;
  owned_ = false;
}

size_t PerfRing::Drain(const std::function<void(const perf_event_header*)>& fn) {
  if (!base_) return 0;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  const char* data = static_cast<const char*>(base_) + page_size_;
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  size_t n = 0;
  while (tail < head) {
    size_t off = tail % data_size_;
    perf_event_header hdr;
    // The header itself may wrap.
    if (off + sizeof hdr <= data_size_) {
      std::memcpy(&hdr, data + off, sizeof hdr);
    } else {
      size_t first = data_size_ - off;
      std::memcpy(&hdr, data + off, first);
      std::memcpy(reinterpret_cast<char*>(&hdr) + first, data, sizeof hdr - first);
    }
    if (hdr.size < sizeof hdr || tail + hdr.size > head) break;  // never happens with a sane kernel
    const perf_event_header* rec;
    if (off + hdr.size <= data_size_) {
      rec = reinterpret_cast<const perf_event_header*>(data + off);
    } else {
      bounce_.resize(hdr.size);
      size_t first = data_size_ - off;
      std::memcpy(bounce_.data(), data + off, first);
      std::memcpy(bounce_.data() + first, data, hdr.size - first);
      rec = reinterpret_cast<const perf_event_header*>(bounce_.data());
    }
    fn(rec);
    tail += hdr.size;
    ++n;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  return n;
}

}  // namespace opscope::collect
