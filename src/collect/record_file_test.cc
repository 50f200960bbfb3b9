#include "collect/record_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "base/testing/fuzz_corpus.h"
#include "collect/build_id.h"
#include "collect/perf_map.h"
#include "collect/symbolize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::collect {
namespace {

std::string SampleFile(bool with_symbolized) {
  RecordMeta meta;
  meta.call_graph = CallGraph::kDwarf;
  meta.frequency_hz = 997;
  meta.command = "test";
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  EventBatch b;
  b.AddMmap({10, 10, 5, 0x400000, 0x1000, 0, "/bin/true"});
  b.AddComm({10, 11, 6, false, "worker"});
  b.AddFork({10, 10, 11, 10, 7});
  RawSample s;
  s.pid = 10;
  s.tid = 11;
  s.time_ns = 1000;
  s.period = 1000000;
  s.ips = {0x400010, 0x400020};
  s.regs = std::vector<uint64_t>(17, 7);
  s.stack = std::string(64, 'x');
  b.AddSample(s);
  b.AddLost(3);
  bytes += MakeChunk(ChunkType::kEvents, b.bytes());
  if (with_symbolized) {
    profile::SampleSection sec;
    sec.event = "cpu-clock";
    sec.frames = {{"f", "m", "a.cc", 3, 16, false}, {"g", "m", "a.cc", 9, 32, true}};
    sec.samples.push_back({{0, 1}, 10, 11, 1000, 1e6, -1});
    sec.samples.push_back({{1}, 10, 11, 2000, 2e6, 2});
    sec.thread_names[11] = "worker";
    sec.warnings = {"w"};
    sec.modules = {{"m", "/opt/lib/m", "00ff"}};
    bytes += MakeChunk(ChunkType::kSymbolized, EncodeSampleSection(sec));
  }
  return bytes;
}

TEST(RecordFile, EventsRoundTrip) {
  auto r = RecordReader::FromBytes(SampleFile(false), "t");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->meta().call_graph, CallGraph::kDwarf);
  EXPECT_EQ(r->meta().command, "test");
  int samples = 0, mmaps = 0, comms = 0, forks = 0;
  uint64_t lost = 0;
  EventVisitor v;
  v.sample = [&](const RawSample& s) {
    ++samples;
    EXPECT_EQ(s.tid, 11);
    EXPECT_EQ(s.ips.size(), 2u);
    EXPECT_EQ(s.ips[1], 0x400020u);
    EXPECT_EQ(s.regs.size(), 17u);
    EXPECT_EQ(s.stack.size(), 64u);
    EXPECT_EQ(s.period, 1000000u);
  };
  v.mmap = [&](const RawMmap& m) {
    ++mmaps;
    EXPECT_EQ(m.filename, "/bin/true");
    EXPECT_EQ(m.start, 0x400000u);
  };
  v.comm = [&](const RawComm& c) {
    ++comms;
    EXPECT_EQ(c.comm, "worker");
  };
  v.fork = [&](const RawFork& f) { forks += f.tid == 11; };
  v.lost = [&](uint64_t n) { lost += n; };
  ASSERT_TRUE(r->VisitEvents(v).ok());
  EXPECT_EQ(samples, 1);
  EXPECT_EQ(mmaps, 1);
  EXPECT_EQ(comms, 1);
  EXPECT_EQ(forks, 1);
  EXPECT_EQ(lost, 3u);
  EXPECT_EQ(r->bytes_dropped(), 0u);
}

// A full disk (a file size limit gives the same short write) cuts the file back to its last whole
// chunk, keeps it, and makes every later write fail; nothing written at all leaves no file.
TEST(RecordFile, WriterKeepsWholeChunksWhenTheDiskFills) {
  char dir[] = "/tmp/opscope_writer_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/full.rec", none = std::string(dir) + "/none.rec";
  pid_t pid = fork();  // the limit must not reach the test process
  if (pid == 0) {
    rlimit lim{3000, 3000};
    setrlimit(RLIMIT_FSIZE, &lim);
    auto w = RecordWriter::Create(path);
    if (!w.ok()) _exit(10);
    RecordMeta meta;
    meta.command = "test";
    if (!(*w)->WriteMeta(meta).ok()) _exit(11);
    EventBatch b;
    b.AddMmap({10, 10, 5, 0x400000, 0x1000, 0, std::string(400, 'm')});  // ~420-byte chunks
    int written = 0;
    while ((*w)->WriteEvents(b).ok()) ++written;
    if (written < 2 || !(*w)->failed()) _exit(12);
    if ((*w)->failure().code() != StatusCode::kResourceExhausted ||
        (*w)->failure().message().find("file size limit") == std::string::npos)
      _exit(13);
    if ((*w)->WriteEnd(RecordEnd{}).ok()) _exit(14);  // no chunk after the gap
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != (*w)->bytes_kept())
      _exit(15);
    (void)(*w)->Close();
    // Nothing fits: no file is left.
    rlimit zero{0, 0};
    setrlimit(RLIMIT_FSIZE, &zero);
    auto n = RecordWriter::Create(none);
    if (n.ok() || n.status().message().find("nothing could be written") == std::string::npos)
      _exit(16);
    if (access(none.c_str(), F_OK) == 0) _exit(17);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " (SIGXFSZ?)";
  ASSERT_EQ(WEXITSTATUS(status), 0) << "check number " << WEXITSTATUS(status) << " failed";
  auto r = RecordReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->meta().command, "test");
  EXPECT_EQ(r->bytes_dropped(), 0u) << "the file ends on a whole chunk";
  int mmaps = 0;
  EventVisitor v;
  v.mmap = [&](const RawMmap&) { ++mmaps; };
  ASSERT_TRUE(r->VisitEvents(v).ok());
  EXPECT_GE(mmaps, 2);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(RecordFile, SymbolizedSectionRoundTrip) {
  auto r = RecordReader::FromBytes(SampleFile(true), "t");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->symbolized().has_value());
  const auto& s = *r->symbolized();
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[1].function, "g");
  EXPECT_TRUE(s.frames[1].inlined);
  EXPECT_EQ(s.frames[1].line, 9);
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_EQ(s.samples[0].stack, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(s.samples[1].time_ns, 2000);
  EXPECT_EQ(s.samples[1].weight, 2e6);
  EXPECT_EQ(s.samples[1].op, 2);
  EXPECT_EQ(s.samples[0].op, -1);
  EXPECT_EQ(s.thread_names.at(11), "worker");
  EXPECT_EQ(s.warnings, std::vector<std::string>{"w"});
  ASSERT_EQ(s.modules.size(), 1u);
  EXPECT_EQ(s.modules[0].name, "m");
  EXPECT_EQ(s.modules[0].path, "/opt/lib/m");
  EXPECT_EQ(s.modules[0].build_id, "00ff");
}

// A symbolized chunk written before modules were recorded ends after the warnings: it still
// decodes, with no modules.
TEST(RecordFile, SymbolizedChunkWithoutModulesStillDecodes) {
  profile::SampleSection sec;
  sec.event = "cpu-clock";
  sec.frames = {{"f", "m", "a.cc", 3, 16, false}};
  sec.samples.push_back({{0}, 10, 11, 1000, 1e6, -1});
  sec.warnings = {"w"};
  std::string bytes = EncodeSampleSection(sec);
  ASSERT_EQ(bytes.back(), '\0') << "the module count, last";
  bytes.pop_back();
  auto old = DecodeSampleSection(bytes);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->modules.empty());
  EXPECT_EQ(old->warnings, std::vector<std::string>{"w"});
  // A truncated module list is corrupt, not silently short.
  sec.modules = {{"m", "/opt/lib/m", "00ff"}};
  bytes = EncodeSampleSection(sec);
  bytes.resize(bytes.size() - 2);
  EXPECT_FALSE(DecodeSampleSection(bytes).ok());
}

TEST(RecordFile, EveryTruncationIsHandled) {
  std::string full = SampleFile(true);
  size_t complete_prefixes = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    auto r = RecordReader::FromBytes(full.substr(0, n), "t");
    if (!r.ok()) {
      EXPECT_TRUE(r.status().code() == StatusCode::kDataLoss ||
                  r.status().code() == StatusCode::kUnsupported)
          << n << ": " << r.status().message();
      EXPECT_FALSE(r.status().message().empty());
      continue;
    }
    ++complete_prefixes;
    EXPECT_EQ(r->bytes_dropped() > 0, !r->drop_reason().empty());
    EXPECT_TRUE(r->VisitEvents({}).ok());
  }
  EXPECT_GT(complete_prefixes, full.size() / 2);
}

TEST(RecordFile, ForeignAndCorruptFiles) {
  auto r = RecordReader::FromBytes("{\"schema\": 1}", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  std::string bad = SampleFile(true);
  bad[bad.size() - 3] ^= 1;
  auto c = RecordReader::FromBytes(bad, "c");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->symbolized().has_value());
  EXPECT_NE(c->drop_reason().find("checksum"), std::string::npos);
}

// A file of magic, meta, two events chunks (one sample each) and an end chunk; `offsets` gets
// the byte offset of each chunk.
std::string TwoBatchFile(std::vector<size_t>* offsets) {
  RecordMeta meta;
  meta.command = "two";
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  auto add = [&](ChunkType t, const std::string& payload) {
    offsets->push_back(bytes.size());
    bytes += MakeChunk(t, payload);
  };
  add(ChunkType::kMeta, MetaChunkPayload(meta));
  for (int tid : {21, 22}) {
    EventBatch b;
    RawSample s;
    s.pid = 20;
    s.tid = tid;
    s.period = 1;
    s.ips = {0x400010};
    b.AddSample(s);
    add(ChunkType::kEvents, b.bytes());
  }
  add(ChunkType::kEnd, R"({"exit": "exited with status 0", "samples": 2})");
  return bytes;
}

void PutLength(std::string* bytes, size_t chunk, uint32_t len) {
  for (int k = 0; k < 4; ++k) (*bytes)[chunk + 4 + k] = static_cast<char>(len >> (8 * k));
}

std::vector<int32_t> SampleTids(const RecordReader& r, Status* st) {
  std::vector<int32_t> tids;
  EventVisitor v;
  v.sample = [&](const RawSample& s) { tids.push_back(s.tid); };
  *st = r.VisitEvents(v);
  return tids;
}

TEST(RecordFile, CorruptMetaChunkIsCalledCorruptNotTruncated) {
  std::vector<size_t> at;
  std::string bytes = TwoBatchFile(&at);
  std::string bad_crc = bytes;
  bad_crc[at[0] + 14] ^= 0x20;  // inside the meta JSON
  auto r = RecordReader::FromBytes(bad_crc, "m.rec");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  const std::string m = r.status().message();  // a copy: status() returns by value
  EXPECT_EQ(m.find("right after the magic"), std::string::npos) << m;
  EXPECT_NE(m.find("meta chunk"), std::string::npos) << m;
  EXPECT_NE(m.find("checksum"), std::string::npos) << m;
  EXPECT_NE(m.find("corrupt"), std::string::npos) << m;

  std::string too_long = bytes;
  PutLength(&too_long, at[0], 0xfffff000u);
  r = RecordReader::FromBytes(too_long, "m.rec");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("right after the magic"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("past the end of the file"), std::string::npos)
      << r.status().message();

  auto magic_only = RecordReader::FromBytes(bytes.substr(0, sizeof kRecordMagic), "m.rec");
  ASSERT_FALSE(magic_only.ok());
  EXPECT_NE(magic_only.status().message().find("right after the magic"), std::string::npos);
}

TEST(RecordFile, CorruptEventsChunkIsSkippedAndTheNextOneRead) {
  std::vector<size_t> at;
  std::string bytes = TwoBatchFile(&at);
  bytes[at[1] + 13] ^= 0x01;  // payload of the first events chunk
  auto r = RecordReader::FromBytes(bytes, "e.rec");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Status st;
  EXPECT_EQ(SampleTids(*r, &st), std::vector<int32_t>{22});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("at byte " + std::to_string(at[1])), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("checksum"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("the other 1 events chunk(s) were read"), std::string::npos)
      << st.message();
  EXPECT_TRUE(r->end().has_value());
}

TEST(RecordFile, DamagedChunkHeaderResynchronisesOnTheNextValidChunk) {
  std::vector<size_t> at;
  std::string bytes = TwoBatchFile(&at);
  PutLength(&bytes, at[1], 0x7ffffff0u);  // the first events chunk's length now runs past the end
  auto r = RecordReader::FromBytes(bytes, "h.rec");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Status st;
  EXPECT_EQ(SampleTids(*r, &st), std::vector<int32_t>{22});
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(r->end().has_value());  // the chunks after the damage are kept
  EXPECT_EQ(r->bytes_dropped(), 0u);
  ASSERT_EQ(r->problems().size(), 1u);
  EXPECT_NE(r->problems()[0].find("at byte " + std::to_string(at[1])), std::string::npos)
      << r->problems()[0];
  EXPECT_NE(r->problems()[0].find("skipped " + std::to_string(at[2] - at[1]) + " bytes"),
            std::string::npos)
      << r->problems()[0];

  // The same damage in the last chunk is a cut, not a resynchronisation.
  std::string cut = TwoBatchFile(&at);
  PutLength(&cut, at[3], 0x7ffffff0u);
  auto c = RecordReader::FromBytes(cut, "c.rec");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->problems().empty());
  EXPECT_GT(c->bytes_dropped(), 0u);
  EXPECT_NE(c->drop_reason().find("cut short"), std::string::npos);
}

TEST(RecordFile, FuzzEntryOnSeedsTruncationsAndBitFlips) {
  std::vector<std::string> seeds = {SampleFile(false), SampleFile(true), "", "OPSREC", "{}"};
  for (const auto& seed : seeds) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
    for (size_t n = 0; n < seed.size(); n += 3)
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), n);
    uint32_t rng = 12345;
    for (int i = 0; i < 3000 && !seed.empty(); ++i) {
      std::string m = seed;
      rng = rng * 1664525u + 1013904223u;
      m[rng % m.size()] ^= static_cast<char>(1u << (rng >> 29));
      // Flips inside a chunk fail its CRC; rewrite the CRCs so the payload decoders see them too.
      size_t pos = sizeof kRecordMagic;
      while (pos + 12 <= m.size()) {
        uint32_t len = 0;
        for (int k = 0; k < 4; ++k)
          len |= static_cast<uint32_t>(static_cast<uint8_t>(m[pos + 4 + k])) << (8 * k);
        if (len > m.size() - pos - 12) break;
        std::string fixed = MakeChunk(ChunkType::kMeta, std::string_view(m).substr(pos + 12, len));
        for (int k = 0; k < 4; ++k) m[pos + 8 + k] = fixed[8 + k];
        pos += 12 + len;
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(m.data()), m.size());
    }
  }
}

__attribute__((noinline)) int KnownFunctionForSymbolizer(int x) { return x * 3 + 1; }

TEST(Symbolize, NamesAPcFromMmapEvents) {
  // A synthetic recording of this very process: its executable mapped as /proc/self/maps says,
  // one fp sample whose IP is a known function.
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  RecordMeta meta;
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  EventBatch b;
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[8192];
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end, off;
    char perms[8], path[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &off, path) >= 4 &&
        perms[2] == 'x' && std::string(path) == exe)
      b.AddMmap({getpid(), getpid(), 1, start, end - start, off, path});
  }
  fclose(maps);
  RawSample s;
  s.pid = s.tid = getpid();
  s.time_ns = 2;
  s.period = 1;
  s.ips = {reinterpret_cast<uint64_t>(&KnownFunctionForSymbolizer) + 1};
  b.AddSample(s);
  bytes += MakeChunk(ChunkType::kEvents, b.bytes());
  auto r = RecordReader::FromBytes(bytes, "synthetic");
  ASSERT_TRUE(r.ok());
  auto sec = Symbolize(*r);
  ASSERT_TRUE(sec.ok()) << sec.status().message();
  ASSERT_EQ(sec->samples.size(), 1u);
  ASSERT_FALSE(sec->samples[0].stack.empty());
  const auto& f = sec->frames[sec->samples[0].stack[0]];
  EXPECT_NE(f.function.find("KnownFunctionForSymbolizer(int)"), std::string::npos) << f.function;
  EXPECT_EQ(f.module, "record_collect_test");
  // The module's full path and build id, for pprof's Mapping.
  ASSERT_EQ(sec->modules.size(), 1u);
  EXPECT_EQ(sec->modules[0].name, "record_collect_test");
  EXPECT_EQ(sec->modules[0].path, exe);
  auto id = ReadGnuBuildId(exe);
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(sec->modules[0].build_id, *id);
}

TEST(Symbolize, JitCodeFromPerfMapAndUnknownAnonymousCode) {
  // A process id that cannot exist (above pid_max), so its perf map is ours alone.
  const int pid = 1 << 30;
  std::string map_path = PerfMap::PathFor(pid);
  {
    FILE* f = fopen(map_path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fprintf(f, "7f0000001000 200 jit:conv_fwd_avx2\n");
    fclose(f);
  }
  RecordMeta meta;
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  EventBatch b;
  b.AddMmap({pid, pid, 1, 0x7f0000000000, 0x10000, 0, "//anon"});
  RawSample s;
  s.pid = s.tid = pid;
  s.period = 1;
  s.ips = {0x7f0000001010, 0x7f0000009000};
  b.AddSample(s);
  bytes += MakeChunk(ChunkType::kEvents, b.bytes());
  auto r = RecordReader::FromBytes(bytes, "jit");
  ASSERT_TRUE(r.ok());
  auto sec = Symbolize(*r);
  std::remove(map_path.c_str());
  ASSERT_TRUE(sec.ok());
  ASSERT_EQ(sec->samples.size(), 1u);
  ASSERT_EQ(sec->samples[0].stack.size(), 2u);
  const auto& jit = sec->frames[sec->samples[0].stack[0]];
  EXPECT_EQ(jit.function, "jit:conv_fwd_avx2");
  EXPECT_EQ(jit.module, "[jit]");
  const auto& anon = sec->frames[sec->samples[0].stack[1]];
  EXPECT_EQ(anon.function, "[unknown]");
}

// The same map made writable by every user is not trusted: the JIT frame stays [unknown] and a
// warning says why.
TEST(Symbolize, PerfMapWritableByOthersIsSkippedWithAWarning) {
  const int pid = (1 << 30) + 2;  // above pid_max
  std::string map_path = PerfMap::PathFor(pid);
  {
    FILE* f = fopen(map_path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fprintf(f, "7f0000001000 200 planted_name\n");
    fclose(f);
  }
  ASSERT_EQ(chmod(map_path.c_str(), 0666), 0);
  RecordMeta meta;
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  EventBatch b;
  b.AddMmap({pid, pid, 1, 0x7f0000000000, 0x10000, 0, "//anon"});
  RawSample s;
  s.pid = s.tid = pid;
  s.period = 1;
  s.ips = {0x7f0000001010};
  b.AddSample(s);
  bytes += MakeChunk(ChunkType::kEvents, b.bytes());
  auto r = RecordReader::FromBytes(bytes, "jit");
  ASSERT_TRUE(r.ok());
  auto sec = Symbolize(*r);
  std::remove(map_path.c_str());
  ASSERT_TRUE(sec.ok());
  ASSERT_EQ(sec->samples.size(), 1u);
  EXPECT_EQ(sec->frames[sec->samples[0].stack[0]].function, "[unknown]");
  bool warned = false;
  for (const auto& w : sec->warnings)
    warned = warned || (w.find("JIT symbol map not read") != std::string::npos &&
                        w.find("writable by other users") != std::string::npos);
  EXPECT_TRUE(warned);
}

// The recorder's uid travels in the meta chunk.
TEST(RecordFile, MetaCarriesTheRecorderUid) {
  RecordMeta meta;
  meta.uid = 4242;
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  auto r = RecordReader::FromBytes(bytes, "uid");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->meta().uid, 4242);
}

// Mapped "files" named by a record file are only opened when they are regular files: a FIFO
// would block symbolization forever; a text file is refused by libelf; nothing of either
// reaches the frames.
TEST(Symbolize, MappedFifoAndTextFileAreWarningsNotHangs) {
  char tmpl[] = "/tmp/opscope_symbolize_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string fifo = dir + "/fifo", text = dir + "/text";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  {
    FILE* f = fopen(text.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fprintf(f, "secret-content-line\n");
    fclose(f);
  }
  const int pid = (1 << 30) + 1;  // above pid_max: no perf map of a real process
  RecordMeta meta;
  std::string bytes(kRecordMagic, sizeof kRecordMagic);
  bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(meta));
  EventBatch b;
  b.AddMmap({pid, pid, 1, 0x500000, 0x1000, 0, fifo});
  b.AddMmap({pid, pid, 1, 0x600000, 0x1000, 0, text});
  RawSample s;
  s.pid = s.tid = pid;
  s.period = 1;
  s.ips = {0x500010, 0x600010};
  b.AddSample(s);
  bytes += MakeChunk(ChunkType::kEvents, b.bytes());
  auto r = RecordReader::FromBytes(bytes, "fifo");
  ASSERT_TRUE(r.ok());
  auto reader = std::make_shared<RecordReader>(std::move(*r));
  // On a thread, so a regression fails the test instead of hanging it.
  auto done = std::make_shared<std::promise<StatusOr<profile::SampleSection>>>();
  auto result = done->get_future();
  std::thread([done, reader] { done->set_value(Symbolize(*reader)); }).detach();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "symbolization blocked on the FIFO";
  auto sec = result.get();
  ASSERT_TRUE(sec.ok()) << sec.status().message();
  std::string warnings;
  for (const auto& w : sec->warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find(fifo + ": not a regular file"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find(text + ": cannot read it"), std::string::npos) << warnings;
  for (const auto& f : sec->frames) {
    EXPECT_EQ(f.function, "[unknown]");
    EXPECT_EQ(f.function.find("secret"), std::string::npos);
  }
  std::remove(fifo.c_str());
  std::remove(text.c_str());
  rmdir(dir.c_str());
}

TEST(Symbolize, Demangles) {
  EXPECT_EQ(Demangle("_ZN2ns1fEi"), "ns::f(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot-valid"), "_Znot-valid");
}

TEST(RecordFile, FuzzRegressionCorpus) {
  int n = opscope::testing::ReplayFuzzCorpus("record_file_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GT(n, 0) << "tests/fuzz_corpus/record_file_fuzz is empty";
}

}  // namespace
}  // namespace opscope::collect
