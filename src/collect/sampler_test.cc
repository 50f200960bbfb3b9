#include "collect/sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "collect/perf_skip_testing.h"
#include "collect/unwind.h"

namespace opscope::collect {
namespace {

// The exact attributes requested: checked here because this machine has no PMU, so the cycles
// path is only exercised at the level of intent.
TEST(SampleAttr, FramePointerCycles) {
  SamplerOptions o;
  o.frequency_hz = 997;
  perf_event_attr a = MakeSampleAttr(o, /*cycles=*/true, /*inherit=*/true, /*enable_on_exec=*/true);
  EXPECT_EQ(a.type, static_cast<uint32_t>(PERF_TYPE_HARDWARE));
  EXPECT_EQ(a.config, static_cast<uint64_t>(PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(a.freq, 1u);
  EXPECT_EQ(a.sample_freq, 997u);
  EXPECT_EQ(a.sample_type,
            static_cast<uint64_t>(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN));
  EXPECT_EQ(a.exclude_kernel, 1u);
  EXPECT_EQ(a.exclude_callchain_kernel, 1u);
  EXPECT_EQ(a.inherit, 1u);
  EXPECT_EQ(a.enable_on_exec, 1u);
  EXPECT_EQ(a.disabled, 1u);
  EXPECT_EQ(a.mmap, 1u);
  EXPECT_EQ(a.mmap2, 1u);
  EXPECT_EQ(a.comm, 1u);
  EXPECT_EQ(a.task, 1u);
  EXPECT_EQ(a.sample_id_all, 1u);
  EXPECT_EQ(a.use_clockid, 1u);
  EXPECT_EQ(a.clockid, CLOCK_MONOTONIC);
}

TEST(SampleAttr, DwarfCpuClock) {
  SamplerOptions o;
  o.call_graph = CallGraph::kDwarf;
  o.stack_bytes = 8192;
  perf_event_attr a = MakeSampleAttr(o, false, false, false);
  EXPECT_EQ(a.type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(a.config, static_cast<uint64_t>(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_REGS_USER);
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_STACK_USER);
  EXPECT_FALSE(a.sample_type & PERF_SAMPLE_CALLCHAIN);
  EXPECT_EQ(a.sample_stack_user, 8192u);
  EXPECT_EQ(a.sample_regs_user, UserRegsMask());
  EXPECT_EQ(a.inherit, 0u);
#if defined(__x86_64__)
  EXPECT_EQ(__builtin_popcountll(UserRegsMask()), 17);
#endif
}

std::string Record(uint32_t type, uint16_t misc, const std::string& body) {
  perf_event_header h{type, misc, static_cast<uint16_t>(sizeof(perf_event_header) + body.size())};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + body;
}
template <typename T>
void Put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

TEST(DecodePerfRecord, FramePointerSampleDropsContextMarkers) {
  SamplerOptions o;
  perf_event_attr a = MakeSampleAttr(o, false, true, true);
  std::string b;
  Put<uint64_t>(b, 0x401000);  // ip
  Put<uint32_t>(b, 100);       // pid
  Put<uint32_t>(b, 101);       // tid
  Put<uint64_t>(b, 5000);      // time
  Put<uint64_t>(b, 1003009);   // period
  Put<uint64_t>(b, 3);         // nr
  Put<uint64_t>(b, static_cast<uint64_t>(PERF_CONTEXT_USER));
  Put<uint64_t>(b, 0x401000);
  Put<uint64_t>(b, 0x402000);
  std::string rec = Record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, b);
  RawSample s;
  ASSERT_TRUE(ParseSample(reinterpret_cast<const perf_event_header*>(rec.data()), a, &s));
  EXPECT_EQ(s.pid, 100);
  EXPECT_EQ(s.tid, 101);
  EXPECT_EQ(s.time_ns, 5000);
  EXPECT_EQ(s.period, 1003009u);
  EXPECT_EQ(s.ips, (std::vector<uint64_t>{0x401000, 0x402000}));
  // A record cut short is rejected, not over-read.
  std::string cut = Record(PERF_RECORD_SAMPLE, 0, b.substr(0, b.size() - 12));
  EXPECT_FALSE(ParseSample(reinterpret_cast<const perf_event_header*>(cut.data()), a, &s));
}

TEST(DecodePerfRecord, DwarfSampleKeepsOnlyTheUsedStack) {
  SamplerOptions o;
  o.call_graph = CallGraph::kDwarf;
  o.stack_bytes = 64;
  perf_event_attr a = MakeSampleAttr(o, false, true, true);
  std::string b;
  Put<uint64_t>(b, 0x401000);
  Put<uint32_t>(b, 1);
  Put<uint32_t>(b, 2);
  Put<uint64_t>(b, 3);
  Put<uint64_t>(b, 4);
  Put<uint64_t>(b, PERF_SAMPLE_REGS_ABI_64);
  int nregs = __builtin_popcountll(UserRegsMask());
  for (int i = 0; i < nregs; ++i) Put<uint64_t>(b, 1000 + i);
  Put<uint64_t>(b, 64);
  b += std::string(64, 's');
  Put<uint64_t>(b, 24);  // dyn_size
  std::string rec = Record(PERF_RECORD_SAMPLE, 0, b);
  RawSample s;
  ASSERT_TRUE(ParseSample(reinterpret_cast<const perf_event_header*>(rec.data()), a, &s));
  EXPECT_EQ(s.regs.size(), static_cast<size_t>(nregs));
  EXPECT_EQ(s.stack.size(), 24u);
}

TEST(DecodePerfRecord, Mmap2LostAndExecComm) {
  SamplerOptions o;
  perf_event_attr a = MakeSampleAttr(o, false, true, true);
  EventBatch batch;
  uint64_t samples = 0, lost = 0;
  std::string m;
  Put<uint32_t>(m, 7);
  Put<uint32_t>(m, 7);
  Put<uint64_t>(m, 0x7f0000000000);
  Put<uint64_t>(m, 0x2000);
  Put<uint64_t>(m, 0x1000);
  m += std::string(24, '\0');  // maj, min, ino, ino_generation
  Put<uint32_t>(m, 5);         // prot: PROT_READ | PROT_EXEC
  Put<uint32_t>(m, 2);
  m += std::string("/usr/lib/libfoo.so\0\0\0\0\0\0", 24);
  Put<uint32_t>(m, 7);
  Put<uint32_t>(m, 7);
  Put<uint64_t>(m, 99);  // sample_id: time
  std::string rec = Record(PERF_RECORD_MMAP2, 0, m);
  EXPECT_TRUE(DecodePerfRecord(reinterpret_cast<const perf_event_header*>(rec.data()), a, &batch,
                               &samples, &lost));
  std::string l;
  Put<uint64_t>(l, 1);
  Put<uint64_t>(l, 42);
  rec = Record(PERF_RECORD_LOST, 0, l);
  EXPECT_TRUE(DecodePerfRecord(reinterpret_cast<const perf_event_header*>(rec.data()), a, &batch,
                               &samples, &lost));
  EXPECT_EQ(lost, 42u);
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(RecordMeta{}));
  bytes += MakeChunk(ChunkType::kEvents, batch.bytes());
  auto r = RecordReader::FromBytes(bytes, "t");
  ASSERT_TRUE(r.ok());
  EventVisitor v;
  int mmaps = 0;
  v.mmap = [&](const RawMmap& mm) {
    ++mmaps;
    EXPECT_EQ(mm.filename, "/usr/lib/libfoo.so");
    EXPECT_EQ(mm.pgoff, 0x1000u);
    EXPECT_EQ(mm.time_ns, 99);
  };
  ASSERT_TRUE(r->VisitEvents(v).ok());
  EXPECT_EQ(mmaps, 1);
}

TEST(Unwind, PerfRegistersMapToDwarfNumbers) {
#if defined(__x86_64__)
  std::vector<uint64_t> perf(17);
  for (size_t i = 0; i < perf.size(); ++i) perf[i] = 100 + i;  // AX=100 BX=101 ... IP=108 R8=109
  std::vector<uint64_t> dwarf;
  uint64_t pc = 0, sp = 0;
  ASSERT_TRUE(DwarfUnwinder::PerfRegsToDwarf(perf, &dwarf, &pc, &sp));
  ASSERT_EQ(dwarf.size(), 17u);
  EXPECT_EQ(dwarf[0], 100u);   // rax
  EXPECT_EQ(dwarf[1], 103u);   // rdx
  EXPECT_EQ(dwarf[2], 102u);   // rcx
  EXPECT_EQ(dwarf[3], 101u);   // rbx
  EXPECT_EQ(dwarf[6], 106u);   // rbp
  EXPECT_EQ(dwarf[7], 107u);   // rsp
  EXPECT_EQ(dwarf[8], 109u);   // r8
  EXPECT_EQ(dwarf[15], 116u);  // r15
  EXPECT_EQ(dwarf[16], 108u);  // rip
  EXPECT_EQ(pc, 108u);
  EXPECT_EQ(sp, 107u);
  EXPECT_FALSE(DwarfUnwinder::PerfRegsToDwarf({1, 2, 3}, &dwarf, &pc, &sp));
#else
  GTEST_SKIP() << "register layout checked on x86_64 only";
#endif
}

__attribute__((noinline)) uint64_t SpinForSampler(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ULL + 1;
  return x;
}

// The in-process sampler really samples this process, including a thread started after Start().
void CheckInProcess(CallGraph cg) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  SamplerOptions o;
  o.frequency_hz = 1999;
  o.call_graph = cg;
  auto s = Sampler::Start(o);
  if (!s.ok() && s.status().code() == StatusCode::kPermissionDenied)
    GTEST_SKIP() << s.status().message();
  ASSERT_TRUE(s.ok()) << s.status().message();
  volatile uint64_t sink = 0;
  std::thread t([&] { sink = SpinForSampler(300); });
  sink = SpinForSampler(300);
  t.join();
  auto sec = (*s)->Stop();
  ASSERT_TRUE(sec.ok()) << sec.status().message();
  ASSERT_GT(sec->samples.size(), 10u);
  std::set<int32_t> tids;
  size_t in_spin = 0;
  for (const auto& smp : sec->samples) {
    tids.insert(smp.tid);
    for (uint32_t f : smp.stack)
      if (sec->frames[f].function.find("SpinForSampler") != std::string::npos) {
        ++in_spin;
        break;
      }
  }
  EXPECT_GE(tids.size(), 2u) << "the thread started after Start() must be sampled too";
  EXPECT_GT(in_spin, sec->samples.size() / 2);
}

TEST(Sampler, InProcessFramePointer) { CheckInProcess(CallGraph::kFramePointer); }
TEST(Sampler, InProcessDwarf) { CheckInProcess(CallGraph::kDwarf); }

TEST(Sampler, RejectsBadOptions) {
  SamplerOptions o;
  o.frequency_hz = 0;
  EXPECT_EQ(Sampler::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.frequency_hz = 997;
  o.ring_pages = 3;
  EXPECT_EQ(Sampler::Start(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace opscope::collect
