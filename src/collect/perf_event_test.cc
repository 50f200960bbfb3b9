// Attribute tests (the idea of perf's tests/attr): for each invocation, the exact
// perf_event_attr requests opscope makes are dumped by a recording fake kernel and compared with
// src/collect/testdata/attr/<invocation>.attr. The fake plays machines we do not have (a PMU,
// perf_event_paranoid=2 without privilege, a PMU-less VM), so the hardware path is tested here.
// Regenerate with OPSCOPE_UPDATE_GOLDEN=1 after an intended change, and review the diff.
#include "collect/perf_event.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "base/host.h"
#include "base/strings.h"
#include "base/testing/golden.h"
#include "collect/op_counters.h"
#include "collect/perf_skip_testing.h"
#include "collect/sampler.h"

namespace opscope::collect {
namespace {

std::string GoldenPath(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/collect/testdata/attr/" + name + ".attr";
}

void CompareGolden(const std::string& name, const std::string& actual) {
  ::opscope::testing::ExpectMatchesGolden(GoldenPath(name), actual);
}

// Runs one `opscope stat -e LIST` open against the fake and returns the dump with the
// degradations on top.
std::string StatInvocation(RecordingPerfEventOpener& fake, const std::string& event_list,
                           Status* status = nullptr) {
  std::vector<EventSpec> events;
  if (event_list.empty()) {
    events = DefaultStatEvents();
  } else {
    auto parsed = ParseEventList(event_list);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (!parsed.ok()) return "";
    events = *parsed;
  }
  std::vector<std::string> degradations;
  StatusOr<CounterSet> set = CounterSet::Open(fake, events, StatTarget(4242), &degradations);
  if (status) *status = set.status();
  std::string out;
  for (const std::string& d : degradations) out += "# degradation: " + d + "\n";
  if (set.ok())
    for (const auto& slot : set->slots())
      out += "# slot " + slot.requested + " -> " +
             (slot.supported ? slot.spec.name : "(not counted)") +
             (slot.supported ? " group " + std::to_string(slot.group) : "") +
             (slot.pmus.empty() ? "" : " on " + Join(slot.pmus, ", ")) + "\n";
  return out + "\n" + fake.Dump();
}

TEST(AttrTest, StatDefaultEvents) {
  RecordingPerfEventOpener fake;
  CompareGolden("stat-default", StatInvocation(fake, ""));
}

TEST(AttrTest, StatCyclesInstructions) {
  RecordingPerfEventOpener fake;
  CompareGolden("stat-e-cycles-instructions", StatInvocation(fake, "cycles,instructions"));
}

// big.LITTLE (the RK3588 tree: armv8_cortex_a55 type 8, armv8_cortex_a76 type 9): each generic
// hardware event once per core PMU, the PMU's type in config's upper 32 bits, each PMU's events
// in a group of their own; software events as ever. Raw events stay as given.
TEST(AttrTest, StatOnBigLittle) {
  SetSysroot(std::string(OPSCOPE_SOURCE_DIR) + "/tests/boards/rk3588");
  ASSERT_EQ(HybridCorePmus().size(), 2u);
  RecordingPerfEventOpener fake;
  CompareGolden("stat-big-little",
                StatInvocation(fake, "cycles,instructions,L1-dcache-load-misses,task-clock,r11"));
  SetSysroot("");
}

// An Arm kernel without the extended type: the PMU's own type with the Armv8 common event
// number (CPU_CYCLES 0x11, INST_RETIRED 0x08); a cache event has none and is not counted.
TEST(AttrTest, StatOnBigLittleWithoutExtendedType) {
  SetSysroot(std::string(OPSCOPE_SOURCE_DIR) + "/tests/boards/rk3588");
  RecordingPerfEventOpener fake;
  fake.no_extended_type = true;
  CompareGolden("stat-big-little-old-kernel",
                StatInvocation(fake, "cycles,instructions,L1-dcache-load-misses"));
  SetSysroot("");
}

// One core PMU (the Orin tree, or this VM) is not hybrid: events are opened as before.
TEST(AttrTest, OneCorePmuIsNotHybrid) {
  SetSysroot(std::string(OPSCOPE_SOURCE_DIR) + "/tests/boards/jetson_agx_orin");
  EXPECT_TRUE(HybridCorePmus().empty());
  SetSysroot("");
  EXPECT_EQ(Armv8CommonEvent(PERF_COUNT_HW_CPU_CYCLES), 0x11);
  EXPECT_EQ(Armv8CommonEvent(PERF_COUNT_HW_REF_CPU_CYCLES), -1);
}

TEST(AttrTest, StatRawEvent) {
  RecordingPerfEventOpener fake;
  CompareGolden("stat-e-r01c2", StatInvocation(fake, "r01c2,r003c:u"));
}

TEST(AttrTest, StatLibpfmNames) {
  auto probe = ParseEvent("perf::instructions");
  if (!probe.ok()) GTEST_SKIP() << "opscope built without libpfm4: " << probe.status().message();
  RecordingPerfEventOpener fake;
  CompareGolden("stat-e-libpfm",
                StatInvocation(fake, "perf::instructions,perf::PERF_COUNT_SW_PAGE_FAULTS"));
}

TEST(AttrTest, StatParanoid2UserOnly) {
  RecordingPerfEventOpener fake;
  fake.paranoid = 2;
  fake.privileged = false;
  CompareGolden("stat-paranoid2-user-only", StatInvocation(fake, ""));
}

TEST(AttrTest, StatNoPmuFallback) {
  RecordingPerfEventOpener fake;
  fake.no_pmu = true;
  CompareGolden("stat-no-pmu", StatInvocation(fake, ""));
}

TEST(AttrTest, StatNoPmuParanoid2) {
  RecordingPerfEventOpener fake;
  fake.no_pmu = true;
  fake.paranoid = 2;
  fake.privileged = false;
  CompareGolden("stat-no-pmu-paranoid2", StatInvocation(fake, "cycles,task-clock,page-faults"));
}

TEST(AttrTest, LadderDoesNotDependOnErrorOrder) {
  for (bool pmu_first : {false, true}) {
    RecordingPerfEventOpener fake;
    fake.no_pmu = true;
    fake.paranoid = 2;
    fake.privileged = false;
    fake.pmu_first = pmu_first;
    std::vector<std::string> degradations;
    auto set = CounterSet::Open(fake, *ParseEventList("cycles,instructions,task-clock"),
                                StatTarget(1), &degradations);
    ASSERT_TRUE(set.ok()) << set.status().message();
    EXPECT_TRUE(set->user_only());
    EXPECT_EQ(set->slots()[0].spec.name, "cpu-clock");
    EXPECT_TRUE(set->slots()[0].supported);
    EXPECT_FALSE(set->slots()[1].supported);
    EXPECT_TRUE(set->slots()[2].supported);
    EXPECT_EQ(degradations.size(), 3u) << pmu_first;
  }
}

TEST(AttrTest, OpCountersPerThread) {
  RecordingPerfEventOpener fake;
  OpCounters::Options o;
  o.num_steps = 3;
  o.tids = {101, 102};
  o.opener = &fake;
  auto c = OpCounters::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  CompareGolden("op-counters-two-threads", fake.Dump());
  EXPECT_EQ((*c)->event_names().size(), DefaultOpEvents().size());
}

TEST(AttrTest, OpCountersNoPmu) {
  RecordingPerfEventOpener fake;
  fake.no_pmu = true;
  OpCounters::Options o;
  o.num_steps = 1;
  o.tids = {101};
  o.opener = &fake;
  auto c = OpCounters::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  // cycles -> cpu-clock; instructions, cache-misses, branch-misses dropped.
  std::vector<std::string> expected = {"cpu-clock", "task-clock", "page-faults",
                                       "context-switches"};
  EXPECT_EQ((*c)->event_names(), expected);
  ASSERT_FALSE((*c)->degradations().empty());
  EXPECT_NE((*c)->degradations()[0].find("cycles unavailable (no hardware PMU): using cpu-clock"),
            std::string::npos);
}

TEST(AttrTest, Paranoid3IsAnErrorThatNamesTheSetting) {
  RecordingPerfEventOpener fake;
  fake.paranoid = 3;
  fake.privileged = false;
  Status st;
  StatInvocation(fake, "task-clock", &st);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("kernel.perf_event_paranoid=3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sysctl kernel.perf_event_paranoid=1"), std::string::npos);
  EXPECT_NE(st.message().find("CAP_PERFMON"), std::string::npos);
}

TEST(AttrTest, NothingCountableIsUnavailable) {
  RecordingPerfEventOpener fake;
  fake.no_pmu = true;
  Status st;
  StatInvocation(fake, "instructions,branch-misses", &st);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.message();
}

TEST(AttrTest, HardwareGroupsAreSplit) {
  RecordingPerfEventOpener fake;
  auto events =
      ParseEventList("cycles,instructions,branches,branch-misses,cache-references,cache-misses");
  ASSERT_TRUE(events.ok());
  auto set = CounterSet::Open(fake, *events, StatTarget(1), nullptr);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->slots()[3].group, 0);
  EXPECT_EQ(set->slots()[4].group, 1);  // kMaxHardwareGroup = 4
}

// The sampler's opens (record, record -p, record -a, profile --sample) through the same ladder.
std::string SampleInvocation(RecordingPerfEventOpener& fake, const SampleTarget& target,
                             SamplerOptions opt = {}, Status* status = nullptr) {
  opt.opener = &fake;
  perf_event_attr attr{};
  RecordMeta meta;
  auto fds = OpenSampleEvents(opt, target, &attr, &meta);
  if (status) *status = fds.status();
  std::string out;
  for (const std::string& d : meta.degradations) out += "# degradation: " + d + "\n";
  if (fds.ok()) {
    out +=
        "# event " + meta.event + " (" + meta.unit + "), " + std::to_string(fds->size()) + " fds\n";
    for (int fd : *fds) close(fd);
  }
  return out + "\n" + fake.Dump();
}

SampleTarget LaunchedChild() {
  SampleTarget t;
  t.tasks = {4242};
  t.cpus = {0, 1};
  t.inherit = true;
  t.enable_on_exec = true;
  return t;
}

TEST(AttrTest, RecordCommandWithPmu) {
  RecordingPerfEventOpener fake;
  CompareGolden("record-default", SampleInvocation(fake, LaunchedChild()));
}

TEST(AttrTest, RecordCommandNoPmuFallsBackToCpuClock) {
  RecordingPerfEventOpener fake;
  fake.no_pmu = true;
  CompareGolden("record-no-pmu", SampleInvocation(fake, LaunchedChild()));
}

TEST(AttrTest, RecordUnderParanoid2IsUserOnlyAlready) {
  RecordingPerfEventOpener fake;
  fake.paranoid = 2;
  fake.privileged = false;
  fake.no_pmu = true;
  Status st;
  const std::string dump = SampleInvocation(fake, LaunchedChild(), {}, &st);
  EXPECT_TRUE(st.ok()) << st.message();
  // exclude_kernel from the start: no user-only rung, only the cpu-clock one.
  EXPECT_EQ(dump.find("counting user space only"), std::string::npos) << dump;
  EXPECT_EQ(fake.calls().size(), 3u);
}

TEST(AttrTest, RecordDwarfCallGraph) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden file holds x86-64's perf_regs mask";
#endif
  RecordingPerfEventOpener fake;
  SamplerOptions opt;
  opt.call_graph = CallGraph::kDwarf;
  opt.stack_bytes = 8192;
  opt.frequency_hz = 499;
  CompareGolden("record-call-graph-dwarf", SampleInvocation(fake, LaunchedChild(), opt));
}

TEST(AttrTest, RecordAttachToThreads) {
  RecordingPerfEventOpener fake;
  SampleTarget t;
  t.tasks = {300, 301, 302};
  CompareGolden("record-p-threads", SampleInvocation(fake, t));
}

TEST(AttrTest, RecordSystemWide) {
  RecordingPerfEventOpener fake;
  SampleTarget t;
  t.tasks = {-1};
  t.cpus = {0, 1, 2};
  CompareGolden("record-a", SampleInvocation(fake, t));
}

TEST(AttrTest, RecordParanoid3NamesTheSetting) {
  RecordingPerfEventOpener fake;
  fake.paranoid = 3;
  fake.privileged = false;
  Status st;
  SampleInvocation(fake, LaunchedChild(), {}, &st);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("kernel.perf_event_paranoid=3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("CAP_PERFMON"), std::string::npos) << st.message();
}

TEST(AttrTest, OneLadderForBothCallers) {
  perf_event_attr a{};
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CPU_CYCLES;
  EXPECT_EQ(NextFallback(3, a), Fallback::kNone);
  EXPECT_EQ(NextFallback(-ENOENT, a), Fallback::kCpuClock);
  EXPECT_EQ(NextFallback(-EACCES, a), Fallback::kUserOnly);
  a.exclude_kernel = 1;
  EXPECT_EQ(NextFallback(-EACCES, a), Fallback::kRefused);
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  EXPECT_EQ(NextFallback(-EOPNOTSUPP, a), Fallback::kUnsupported);
  a.type = PERF_TYPE_SOFTWARE;
  EXPECT_EQ(NextFallback(-ESRCH, a), Fallback::kFailed);
  // ENOSYS (qemu-user, no CONFIG_PERF_EVENTS): no cpu-clock stand-in, which would fail the same
  // way, and a message that says so instead of blaming a missing PMU.
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CPU_CYCLES;
  EXPECT_EQ(NextFallback(-ENOSYS, a), Fallback::kFailed);
  EventSpec cycles;
  cycles.name = "cycles";
  cycles.type = PERF_TYPE_HARDWARE;
  const std::string text = PerfErrorText(ENOSYS, cycles, SystemOpener());
  EXPECT_NE(text.find("not implemented here (ENOSYS): an emulator such as qemu-user"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("no hardware PMU"), std::string::npos) << text;
  // A CounterSet stops at the first ENOSYS with that text (it used to go on and end with "none
  // of the events could be counted here; try software events", the very events that failed).
  RecordingPerfEventOpener fake;
  fake.no_syscall = true;
  std::vector<std::string> degradations;
  auto set =
      CounterSet::Open(fake, *ParseEventList("cycles,task-clock"), CounterTarget{}, &degradations);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(set.status().message().find("(ENOSYS)"), std::string::npos) << set.status().message();
  EXPECT_EQ(set.status().message().find("try software events"), std::string::npos);
  EXPECT_EQ(fake.calls().size(), 1u) << "no cpu-clock stand-in, no second event";
}

TEST(EventParseTest, GenericAndCacheAndRaw) {
  auto e = ParseEvent("LLC-load-misses");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, PERF_TYPE_HW_CACHE);
  EXPECT_EQ(e->config, PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                           (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
  e = ParseEvent("L1-dcache-loads");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->config, PERF_COUNT_HW_CACHE_L1D);
  e = ParseEvent("r01c2");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, PERF_TYPE_RAW);
  EXPECT_EQ(e->config, 0x1c2u);
  e = ParseEvent("faults");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->config, PERF_COUNT_SW_PAGE_FAULTS);
  e = ParseEvent("cycles:u");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->exclude_kernel);
  EXPECT_FALSE(e->exclude_user);
  EXPECT_EQ(e->name, "cycles:u");
  EXPECT_TRUE(ParseEvent("task-clock")->IsTime());
  EXPECT_FALSE(ParseEvent("task-clock")->NeedsPmu());
  EXPECT_TRUE(ParseEvent("cache-misses")->NeedsPmu());
}

TEST(EventParseTest, UnknownNameSaysWhatToDo) {
  auto e = ParseEvent("no-such-event-xyz");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("no-such-event-xyz"), std::string::npos);
  EXPECT_FALSE(ParseEventList(",,").ok());
  EXPECT_FALSE(ParseEvent("rZZ").ok() && ParseEvent("rZZ")->type == PERF_TYPE_RAW);
}

// Event lists come from the command line: truncations and byte flips of valid lists must give a
// spec or a clear InvalidArgument, never a crash.
TEST(EventParseTest, MangledListsNeverCrash) {
  const std::string seeds[] = {"cycles,instructions,L1-dcache-load-misses:u", "r01c2,task-clock:k",
                               "perf::instructions,LLC-prefetch-misses"};
  for (const std::string& seed : seeds) {
    for (size_t cut = 0; cut <= seed.size(); ++cut) {
      auto r = ParseEventList(seed.substr(0, cut));
      if (!r.ok()) {
        EXPECT_FALSE(r.status().message().empty());
      }
    }
    for (size_t i = 0; i < seed.size(); ++i) {
      for (unsigned char bit : {0x01, 0x20, 0x80}) {
        std::string m = seed;
        m[i] = static_cast<char>(m[i] ^ bit);
        auto r = ParseEventList(m);
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << m;
        }
      }
    }
  }
}

TEST(EventParseTest, CpuSpecificLibpfmName) {
  // The CPU's own names depend on the CPU; try a few common ones, skip if none is known here.
  for (const char* name : {"RETIRED_INSTRUCTIONS", "INST_RETIRED:ANY_P", "INST_RETIRED"}) {
    auto e = ParseEvent(name);
    if (e.ok()) {
      EXPECT_TRUE(e->NeedsPmu()) << name;
      return;
    }
  }
  GTEST_SKIP() << "libpfm4 is absent or knows none of the probe names for this CPU";
}

// On this machine, the real kernel: software events count, and the ladder handles the rest.
// page-faults is counted in a set of its own: on the build VM's kernel (6.18) a page-faults
// counter in one group with task-clock undercounts, sometimes to 0 (a plain C program with the
// same two-event group shows it too; alone it counts every fault). See the issue notes.
TEST(RealKernelTest, SelfCountingSoftwareEvents) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  auto clocks = ParseEventList("task-clock,cycles");
  auto faults = ParseEventList("page-faults");
  ASSERT_TRUE(clocks.ok() && faults.ok());
  CounterTarget self;
  self.pid = 0;
  std::vector<std::string> degradations;
  auto set = CounterSet::Open(SystemOpener(), *clocks, self, &degradations);
  auto fset = CounterSet::Open(SystemOpener(), *faults, self, &degradations);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_TRUE(fset.ok()) << fset.status().message();
  std::vector<RawCount> before(2), after(2), fbefore(1), fafter(1);
  ASSERT_TRUE(set->Read(before).ok());
  ASSERT_TRUE(fset->Read(fbefore).ok());
  // Fresh anonymous memory without transparent huge pages, so that every 4 KiB page faults
  // once (with THP "always", a 2 MiB page can take the faults of 512 pages at once).
  const size_t bytes = size_t{64} << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  madvise(p, bytes, MADV_NOHUGEPAGE);
  char* mem = static_cast<char*>(p);
  for (size_t i = 0; i < bytes; i += 4096) mem[i] = 1;
  ASSERT_TRUE(fset->Read(fafter).ok());
  ASSERT_TRUE(set->Read(after).ok());
  munmap(p, bytes);
  EXPECT_GT(after[0].value, before[0].value);
  EXPECT_GE(fafter[0].value - fbefore[0].value, (64u << 20) / 4096 / 2);  // THP may halve it
  EXPECT_TRUE(set->slots()[1].supported);  // cycles, or cpu-clock standing in for it
}

}  // namespace
}  // namespace opscope::collect
