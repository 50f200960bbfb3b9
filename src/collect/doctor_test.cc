// The machine checks and permission lines, on synthetic machine states.
#include "collect/doctor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

#include "collect/perf_access.h"

namespace opscope::collect {
namespace {

using Level = DoctorCheck::Level;

PerfAccess User(int paranoid) {
  PerfAccess a;
  a.paranoid = paranoid;
  a.uid = 1000;
  return a;
}

TEST(PerfAccessTest, Paranoid3RefusesEverythingWithTheFix) {
  Status st = CheckPerfAccess(User(3), {});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("kernel.perf_event_paranoid=3 forbids every perf event"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("sysctl kernel.perf_event_paranoid=2"), std::string::npos);
  EXPECT_NE(st.message().find("CAP_PERFMON"), std::string::npos);
  PerfAccess root = User(3);
  root.root = true;
  EXPECT_TRUE(CheckPerfAccess(root, {}).ok());
}

TEST(PerfAccessTest, SystemWideNeedsParanoid0OrCapPerfmon) {
  AccessNeeds all;
  all.system_wide = true;
  EXPECT_TRUE(CheckPerfAccess(User(2), {}).ok()) << "own processes are fine at 2";
  Status st = CheckPerfAccess(User(1), all);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("system-wide (-a/-C)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("kernel.perf_event_paranoid=0"), std::string::npos);
  EXPECT_TRUE(CheckPerfAccess(User(0), all).ok());
  PerfAccess cap = User(2);
  cap.cap_perfmon = true;
  EXPECT_TRUE(CheckPerfAccess(cap, all).ok());
}

TEST(PerfAccessTest, AttachingToAnotherUsersProcessNeedsCapSysPtrace) {
  AccessNeeds own;
  own.attach_pids = {4242};
  own.attach_uids = {1000};
  EXPECT_TRUE(CheckPerfAccess(User(2), own).ok());
  AccessNeeds other = own;
  other.attach_uids = {0};
  Status st = CheckPerfAccess(User(2), other);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("process 4242 belongs to uid 0"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("CAP_SYS_PTRACE"), std::string::npos);
  PerfAccess ptrace = User(2);
  ptrace.cap_sys_ptrace = true;
  EXPECT_TRUE(CheckPerfAccess(ptrace, other).ok());
}

TEST(PerfAccessTest, ProcessOwner) {
  auto self = ProcessOwner(getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(*self, geteuid());
  EXPECT_EQ(ProcessOwner(0).status().code(), StatusCode::kNotFound);
}

TEST(DoctorTest, PerfPermissionsSayWhatEachLevelBlocks) {
  EXPECT_EQ(CheckPerfPermissions(User(3)).level, Level::kBad);
  DoctorCheck two = CheckPerfPermissions(User(2));
  EXPECT_EQ(two.level, Level::kWarn);
  EXPECT_NE(two.finding.find("user space only"), std::string::npos) << two.finding;
  EXPECT_NE(CheckPerfPermissions(User(1)).finding.find("-a/-C refused"), std::string::npos);
  EXPECT_EQ(CheckPerfPermissions(User(-1)).level, Level::kOk);
}

TEST(DoctorTest, Pmu) {
  EXPECT_EQ(CheckPmu(5).level, Level::kOk);
  DoctorCheck none = CheckPmu(-ENOENT);
  EXPECT_EQ(none.level, Level::kWarn);
  EXPECT_NE(none.meaning.find("cpu-clock"), std::string::npos);
  EXPECT_NE(CheckPmu(-EACCES).meaning.find("permissions"), std::string::npos);
  EXPECT_NE(CheckPmu(-ENOSYS).meaning.find("qemu-user"), std::string::npos);
  EXPECT_EQ(CheckPmu(-ENOSYS).level, Level::kBad);
}

TEST(DoctorTest, GovernorTurboThpNumaSmt) {
  EXPECT_EQ(CheckGovernor({"performance", "performance"}).level, Level::kOk);
  DoctorCheck mixed = CheckGovernor({"powersave", "performance", "powersave"});
  EXPECT_EQ(mixed.level, Level::kWarn);
  EXPECT_EQ(mixed.finding, "performance (1 CPUs), powersave (2 CPUs)");
  EXPECT_EQ(CheckGovernor({}).level, Level::kNote);
  EXPECT_EQ(CheckTurbo("0\n", "").level, Level::kWarn);  // intel_pstate: no_turbo=0 is turbo on
  EXPECT_EQ(CheckTurbo("1\n", "").level, Level::kOk);
  EXPECT_EQ(CheckTurbo("", "1").level, Level::kWarn);
  EXPECT_EQ(CheckTurbo("", "0").level, Level::kOk);
  EXPECT_EQ(CheckThp("[always] madvise never\n").finding, "THP always");
  EXPECT_EQ(CheckThp("[always] madvise never\n").level, Level::kNote);
  EXPECT_EQ(CheckThp("always [madvise] never\n").level, Level::kOk);
  EXPECT_EQ(CheckNuma(2).level, Level::kWarn);
  EXPECT_NE(CheckNuma(2).meaning.find("numactl"), std::string::npos);
  EXPECT_EQ(CheckNuma(1).level, Level::kOk);
  EXPECT_EQ(CheckSmt("1\n", "").level, Level::kNote);
  EXPECT_EQ(CheckSmt("0\n", "0,8").level, Level::kOk);
  EXPECT_EQ(CheckSmt("", "0,8").level, Level::kNote);
  EXPECT_EQ(CheckSmt("", "0").level, Level::kOk);
}

TEST(DoctorTest, CudaDriver) {
  CudaProbe none;
  EXPECT_EQ(CheckCuda(none).level, Level::kNote);
  CudaProbe failed;
  failed.loadable = true;
  failed.init_result = 100;  // CUDA_ERROR_NO_DEVICE
  failed.driver_version = 13000;
  DoctorCheck f = CheckCuda(failed);
  EXPECT_EQ(f.level, Level::kWarn);
  EXPECT_NE(f.finding.find("driver API 13.0"), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find("error 100"), std::string::npos);
  CudaProbe ok = failed;
  ok.init_result = 0;
  ok.devices = {"NVIDIA H200"};
  EXPECT_EQ(CheckCuda(ok).level, Level::kOk);
  EXPECT_NE(CheckCuda(ok).finding.find("1 device(s): NVIDIA H200"), std::string::npos);
}

TEST(DoctorTest, RunsOnThisMachine) {
  auto checks = RunDoctorChecks();
  ASSERT_EQ(checks.size(), 11u);  // ... CUDA, board
  for (const auto& c : checks) {
    EXPECT_FALSE(c.area.empty());
    EXPECT_FALSE(c.finding.empty()) << c.area;
    EXPECT_FALSE(c.meaning.empty()) << c.area;
  }
}

}  // namespace
}  // namespace opscope::collect
