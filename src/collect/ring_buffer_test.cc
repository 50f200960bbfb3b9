#include "collect/ring_buffer.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

namespace opscope::collect {
namespace {

// A fake perf mmap: one metadata page + a small data area, filled the way the kernel does.
struct FakeRing {
  static constexpr size_t kPage = 4096, kData = 256;
  alignas(8) std::vector<char> mem = std::vector<char>(kPage + kData, 0);
  perf_event_mmap_page* meta() { return reinterpret_cast<perf_event_mmap_page*>(mem.data()); }
  void Write(uint32_t type, const std::string& body) {
    perf_event_header h{type, 0, static_cast<uint16_t>(sizeof(perf_event_header) + body.size())};
    std::string rec(reinterpret_cast<const char*>(&h), sizeof h);
    rec += body;
    uint64_t head = meta()->data_head;
    for (size_t i = 0; i < rec.size(); ++i) mem[kPage + (head + i) % kData] = rec[i];
    meta()->data_head = head + rec.size();
  }
};

TEST(PerfRing, ReadsRecordsIncludingOnesThatWrap) {
  FakeRing f;
  PerfRing ring;
  ring.AttachForTest(f.mem.data(), FakeRing::kPage, FakeRing::kData);
  std::vector<std::string> got;
  auto collect = [&](const perf_event_header* h) {
    got.emplace_back(reinterpret_cast<const char*>(h) + sizeof *h, h->size - sizeof *h);
  };
  // Fill most of the ring, drain, then write records that straddle the end.
  for (int i = 0; i < 5; ++i)
    f.Write(PERF_RECORD_SAMPLE, std::string(40, static_cast<char>('a' + i)));
  EXPECT_EQ(ring.Drain(collect), 5u);
  EXPECT_EQ(f.meta()->data_tail, f.meta()->data_head);
  got.clear();
  for (int i = 0; i < 4; ++i)
    f.Write(PERF_RECORD_SAMPLE, std::string(44, static_cast<char>('k' + i)));
  EXPECT_EQ(ring.Drain(collect), 4u);
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], std::string(44, static_cast<char>('k' + i))) << i;
  EXPECT_EQ(ring.Drain(collect), 0u);
}

}  // namespace
}  // namespace opscope::collect
