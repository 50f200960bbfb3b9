// The tracer's writer, exercised in-process and read back by the decoder.
#include "gpu/tracer/trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/files.h"
#include "gpu/decoder.h"

namespace opscope::gpu {
namespace {

TEST(TraceWriterTest, InternsStringsAndWritesDecodableRecords) {
  char dir[] = "/tmp/opscope-gpu-writer-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  tracer::TraceWriter& w = tracer::Writer();
  ASSERT_TRUE(w.Open(dir));
  w.Lock();
  uint32_t a = w.InternLocked("layer1");
  uint32_t b = w.InternLocked("layer2");
  EXPECT_EQ(w.InternLocked("layer1"), a);
  EXPECT_NE(a, b);
  EXPECT_EQ(w.InternLocked(nullptr), 0u);
  // Enough distinct strings to make the table grow several times, and enough records to
  // flush the 1 MiB staging buffer more than once.
  for (int i = 0; i < 20000; ++i) {
    std::string name = "kernel_" + std::to_string(i % 5000);
    trace::NvtxPushRecord push{1000 + i, 7, w.InternLocked(name.c_str()), 0, 0};
    w.AppendLocked(trace::kNvtxPush, &push, sizeof push);
    trace::NvtxPopRecord pop{1001 + i, 7, 0};
    w.AppendLocked(trace::kNvtxPop, &pop, sizeof pop);
  }
  std::string big(3 << 20, 'x');  // larger than the staging buffer: written straight through
  uint32_t big_id = w.InternLocked(big.data(), big.size());
  trace::NvtxMarkRecord mark{5, 7, big_id, 0, 0};
  w.AppendLocked(trace::kNvtxMark, &mark, sizeof mark);
  trace::EndRecord end{9, trace::kEndExit, 0};
  w.AppendLocked(trace::kEnd, &end, sizeof end);
  w.FlushLocked();
  EXPECT_EQ(w.dropped_locked(), 0u);
  w.Unlock();

  std::string path = std::string(dir) + "/gpu-" + std::to_string(getpid()) + ".trace";
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto t = DecodeTrace(*bytes, path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->problem.empty()) << t->problem;
  EXPECT_TRUE(t->ended);
  ASSERT_EQ(t->nvtx.size(), 40001u);
  EXPECT_EQ(t->nvtx[0].name, "kernel_0");
  EXPECT_EQ(t->nvtx[2 * 4999].name, "kernel_4999");
  EXPECT_EQ(t->nvtx[2 * 19999].name, "kernel_4999");
  EXPECT_EQ(t->nvtx.back().name.size(), 1u << 20);  // strings are capped at 1 MiB
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace opscope::gpu

// The copy fingerprints the tracer takes inside the program (tracer/copy_fingerprint.h).
#include <sys/mman.h>

#include <vector>

#include "gpu/tracer/copy_fingerprint.h"

namespace opscope::gpu {
namespace {

uint64_t Fingerprint(const void* p, uint64_t n, bool* sampled = nullptr, int* error = nullptr) {
  bool s = false;
  int e = 0;
  uint64_t h = tracer::FingerprintHostBytes(p, n, &s, &e);
  if (sampled) *sampled = s;
  if (error) *error = e;
  return h;
}

TEST(CopyFingerprintTest, SameBytesSameHashAnyChangeDiffers) {
  std::vector<unsigned char> a(1 << 20), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7 + 3);
  b = a;
  bool sampled = true;
  uint64_t ha = Fingerprint(a.data(), a.size(), &sampled);
  EXPECT_NE(ha, 0u);
  EXPECT_FALSE(sampled);                           // 1 MiB: hashed whole
  EXPECT_EQ(Fingerprint(b.data(), b.size()), ha);  // same bytes elsewhere in memory
  b[a.size() - 1] ^= 1;
  EXPECT_NE(Fingerprint(b.data(), b.size()), ha);      // the very last byte counts
  EXPECT_NE(Fingerprint(a.data(), a.size() - 1), ha);  // the size counts
  // Odd sizes (not a multiple of the 64 KiB reads or of 8).
  EXPECT_NE(Fingerprint(a.data(), 65537), 0u);
  EXPECT_EQ(Fingerprint(a.data(), 65537), Fingerprint(b.data(), 65537));
}

TEST(CopyFingerprintTest, LargeCopiesAreSampled) {
  std::vector<unsigned char> a(8 << 20, 1), b;
  b = a;
  bool sampled = false;
  uint64_t ha = Fingerprint(a.data(), a.size(), &sampled);
  EXPECT_TRUE(sampled);
  EXPECT_EQ(Fingerprint(b.data(), b.size()), ha);
  b[0] = 2;  // the first sampled block starts at 0
  EXPECT_NE(Fingerprint(b.data(), b.size()), ha);
  // An input image changes everywhere: any sample sees it.
  for (size_t i = 0; i < b.size(); i += 4096) b[i] = static_cast<unsigned char>(i);
  EXPECT_NE(Fingerprint(b.data(), b.size()), ha);
}

TEST(CopyFingerprintTest, UnreadableMemoryIsAnErrorNotACrash) {
  void* page = mmap(nullptr, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  int error = 0;
  EXPECT_EQ(Fingerprint(page, 1 << 20, nullptr, &error), 0u);
  EXPECT_EQ(error, EFAULT);
  EXPECT_EQ(Fingerprint(page, 4 << 20, nullptr, &error), 0u);
  EXPECT_EQ(error, EFAULT);
  munmap(page, 1 << 20);
}

}  // namespace
}  // namespace opscope::gpu
