#include "analysis/machine_measure.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"

namespace opscope::analysis {

namespace {

// The peak kernel: independent multiply-add chains on full-width vectors. The number of chains
// must cover the FMA latency times the FMA ports (4-5 cycles x 2 ports on current x86 cores, so
// at least 10) while every accumulator, the multiplier and the addend stay in registers: 16 ymm
// registers on AVX2 (12 chains + 2 constants), 32 zmm on AVX-512. A wider vector type than the
// ISA's registers (the kernel used to run 8 chains of 16 floats on AVX2, i.e. 16 ymm registers of
// accumulators + 2 constants) spills to the stack and measured a third of the real peak. The
// chains are inlined into each target-specific function so that they compile for its ISA.
constexpr int kFmaChains = 12;

template <typename V, int kLanes>
__attribute__((always_inline)) inline float FmaChains(long iters, float seed) {
  V acc[kFmaChains];
  for (int k = 0; k < kFmaChains; ++k)
    for (int l = 0; l < kLanes; ++l) acc[k][l] = seed + 0.001f * (k * kLanes + l);
  V mul, add;
  for (int l = 0; l < kLanes; ++l) {
    mul[l] = 0.9999999f;
    add[l] = 1e-7f;
  }
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kFmaChains; ++k) acc[k] = acc[k] * mul + add;
  }
  V s = acc[0];
  for (int k = 1; k < kFmaChains; ++k) s += acc[k];
  float r = 0;
  for (int l = 0; l < kLanes; ++l) r += s[l];
  return r;
}

typedef float Vec16 __attribute__((vector_size(64)));  // one zmm
typedef float Vec8 __attribute__((vector_size(32)));   // one ymm
typedef float Vec4 __attribute__((vector_size(16)));   // one xmm

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,fma"), noinline)) float FmaAvx512(long iters, float seed) {
  return FmaChains<Vec16, 16>(iters, seed);
}
__attribute__((target("avx2,fma"), noinline)) float FmaAvx2(long iters, float seed) {
  return FmaChains<Vec8, 8>(iters, seed);
}
#endif
// 128-bit vectors: SSE on old x86, NEON (32 registers, fused multiply-add) on AArch64.
__attribute__((noinline)) float Fma128(long iters, float seed) {
  return FmaChains<Vec4, 4>(iters, seed);
}

// The widest kernel this CPU runs, and its floating-point operations per iteration.
struct FmaChoice {
  float (*fn)(long, float);
  double flops_per_iter;
};

FmaChoice ChooseFma() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {FmaAvx512, kFmaChains * 16 * 2.0};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {FmaAvx2, kFmaChains * 8 * 2.0};
#endif
  return {Fma128, kFmaChains * 4 * 2.0};
}

volatile float g_sink;
volatile int32_t g_isink;

// The integer roof: what the engine's quantized GEMM (engine/ops/quant_common.cc) issues per
// pair of int16 multiply-adds, acc = acc + madd(x, m), on independent accumulators (enough to
// cover the multiply's latency on two ports). The multiply input depends on the accumulator so
// the compiler cannot hoist it. Each vpmaddwd is 16 multiply-adds = 32 integer ops.
constexpr int kIntAccumulators = 12;
#if defined(__x86_64__)
// Twelve named accumulators, each step pinned in order by an empty asm (GCC 12 kept an array of
// them on the stack, and without the pins it issues all twelve multiplies first, needing 24
// registers: either way a store and a reload sat in every dependency chain, and the probe
// measured about half the roof the GEMM reaches).
#define OPSCOPE_ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
[[gnu::target("avx2"), gnu::noinline]] int32_t MaddKernelAvx2(long iters, int32_t seed) {
  static_assert(kIntAccumulators == 12);
#define OPSCOPE_DECL(k) __m256i a##k = _mm256_set1_epi32(seed + k);
  OPSCOPE_ACCS(OPSCOPE_DECL)
#undef OPSCOPE_DECL
  const __m256i m = _mm256_set1_epi16(3), one = _mm256_set1_epi32(1);
  for (long i = 0; i < iters; ++i) {
#define OPSCOPE_STEP(k)                                     \
  a##k = _mm256_add_epi32(_mm256_madd_epi16(a##k, m), one); \
  asm volatile("" : "+x"(a##k));
    OPSCOPE_ACCS(OPSCOPE_STEP)
#undef OPSCOPE_STEP
  }
  __m256i s = _mm256_setzero_si256();
#define OPSCOPE_SUM(k) s = _mm256_add_epi32(s, a##k);
  OPSCOPE_ACCS(OPSCOPE_SUM)
#undef OPSCOPE_SUM
  return _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 7);
}
#undef OPSCOPE_ACCS
#endif
// Portable twin: int32 lanes, one multiply-add each (2 ops), 8 lanes per vector.
typedef int32_t IVec8 __attribute__((vector_size(32)));
[[gnu::noinline]] int32_t MaddKernelBaseline(long iters, int32_t seed) {
  IVec8 acc[kIntAccumulators];
  for (int k = 0; k < kIntAccumulators; ++k)
    for (int l = 0; l < 8; ++l) acc[k][l] = seed + k + l;
  IVec8 m = {3, 3, 3, 3, 3, 3, 3, 3}, one = {1, 1, 1, 1, 1, 1, 1, 1};
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kIntAccumulators; ++k) acc[k] = acc[k] * m + one;
  }
  IVec8 s = acc[0];
  for (int k = 1; k < kIntAccumulators; ++k) s += acc[k];
  return s[0] + s[7];
}
bool HaveAvx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}
int32_t MaddKernel(long iters, int32_t seed) {
#if defined(__x86_64__)
  if (HaveAvx2()) return MaddKernelAvx2(iters, seed);
#endif
  return MaddKernelBaseline(iters, seed);
}
double IntOpsPerIter() { return kIntAccumulators * (HaveAvx2() ? 32.0 : 16.0); }

// Runs fn(thread_index) on `threads` threads started together; returns the wall time in seconds
// of the slowest thread's call.
template <typename Fn>
double TimeParallel(int threads, Fn fn) {
  std::barrier start(threads + 1);
  std::atomic<int64_t> end_ns{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
      int64_t now = NowNs(), prev = end_ns.load();
      while (now > prev && !end_ns.compare_exchange_weak(prev, now)) {
      }
    });
  int64_t t0 = NowNs();
  start.arrive_and_wait();
  for (auto& th : pool) th.join();
  return (end_ns.load() - t0) / 1e9;
}

// The best of the repeats; *spread_pct (when asked) = how far the median fell below it, percent.
double BestAndSpread(std::vector<double> v, double* spread_pct) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double best = v.back();
  double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  if (spread_pct) *spread_pct = best > 0 ? 100.0 * (best - median) / best : 0;
  return best;
}

}  // namespace

double MeasurePeakGflops(int threads, double seconds, int repeats, double* spread_pct) {
  // Calibrate the iteration count on one thread.
  const FmaChoice fma = ChooseFma();
  long iters = 1 << 16;
  for (;;) {
    int64_t t0 = NowNs();
    g_sink = fma.fn(iters, 1.0f);
    double dt = (NowNs() - t0) / 1e9;
    if (dt > seconds / 8 || iters > (1L << 40)) {
      iters = static_cast<long>(iters * (seconds / std::max(dt, 1e-6)));
      break;
    }
    iters *= 4;
  }
  iters = std::max(iters, 1L << 16);
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    double dt = TimeParallel(threads, [&](int t) { g_sink = fma.fn(iters, 1.0f + t); });
    runs.push_back(fma.flops_per_iter * iters * threads / dt / 1e9);
  }
  return BestAndSpread(std::move(runs), spread_pct);
}

double MeasurePeakGopsInt8(int threads, double seconds, int repeats, double* spread_pct) {
  long iters = 1 << 16;
  for (;;) {
    int64_t t0 = NowNs();
    g_isink = MaddKernel(iters, 1);
    double dt = (NowNs() - t0) / 1e9;
    if (dt > seconds / 8 || iters > (1L << 40)) {
      iters = static_cast<long>(iters * (seconds / std::max(dt, 1e-6)));
      break;
    }
    iters *= 4;
  }
  iters = std::max(iters, 1L << 16);
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    double dt = TimeParallel(threads, [&](int t) { g_isink = MaddKernel(iters, 1 + t); });
    runs.push_back(IntOpsPerIter() * iters * threads / dt / 1e9);
  }
  return BestAndSpread(std::move(runs), spread_pct);
}

double MeasureTriadGbps(size_t bytes_per_array, int threads, double seconds, int repeats,
                        double* spread_pct) {
  size_t n = std::max<size_t>(bytes_per_array / sizeof(double), threads * 64);
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  auto slice = [&](int t, size_t* lo, size_t* hi) {
    *lo = n * t / threads;
    *hi = n * (t + 1) / threads;
  };
  // First touch by the thread that will use the slice (NUMA placement).
  TimeParallel(threads, [&](int t) {
    size_t lo, hi;
    slice(t, &lo, &hi);
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 0;
      b[i] = 1.0 + i % 7;
      c[i] = 2.0 + i % 5;
    }
  });
  const double s = 3.0;
  auto triad = [&](int t, int passes) {
    size_t lo, hi;
    slice(t, &lo, &hi);
    double* __restrict pa = a.get();
    const double* __restrict pb = b.get();
    const double* __restrict pc = c.get();
    for (int p = 0; p < passes; ++p)
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
  };
  double dt1 = TimeParallel(threads, [&](int t) { triad(t, 1); });
  int passes = std::clamp(static_cast<int>(seconds / std::max(dt1, 1e-7)), 1, 1 << 20);
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    double dt = TimeParallel(threads, [&](int t) { triad(t, passes); });
    runs.push_back(24.0 * n * passes / dt / 1e9);
  }
  volatile double keep = a[n / 2];
  (void)keep;
  return BestAndSpread(std::move(runs), spread_pct);
}

CpuStamp ThisCpuStamp() {
  HostInfo host = ReadHostInfo();
  CpuStamp s;
  s.model = host.cpu_model;
  s.cpus = host.logical_cpus;
  auto cpuinfo = ReadFile(HostPath("/proc/cpuinfo"));
  if (!cpuinfo.ok()) return s;
  for (const std::string& line : Split(*cpuinfo, '\n')) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon));
    if (key == "flags" || key == "Features") {
      s.flags = RelevantCpuFlags(line.substr(colon + 1));
      break;
    }
  }
  return s;
}

size_t LastLevelCacheBytes() {
  size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::string base =
        HostPath("/sys/devices/system/cpu/cpu0/cache/index") + std::to_string(idx) + "/";
    std::string size = Trim(ReadSysFile(base + "size"));
    std::string type = Trim(ReadSysFile(base + "type"));
    if (size.empty()) continue;
    if (type == "Instruction") continue;
    size_t mult = 1;
    if (EndsWith(size, "K"))
      mult = 1024, size.pop_back();
    else if (EndsWith(size, "M"))
      mult = 1024 * 1024, size.pop_back();
    int64_t v = 0;
    if (ParseInt64(size, &v) && v > 0) best = std::max(best, static_cast<size_t>(v) * mult);
  }
  return best;
}

std::string DefaultMachineFile() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/opscope/machine.json";
  const char* home = std::getenv("HOME");
  if (home && home[0]) return std::string(home) + "/.config/opscope/machine.json";
  return "";
}

StatusOr<MachineCeilings> LoadMachineFile(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return CeilingsFromJson(text, path);
}

Status SaveMachineFile(const MachineCeilings& c, const std::string& path) {
  // mkdir -p of the parent folder.
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    std::string dir = path.substr(0, pos);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return PermissionDenied(
          dir + ": cannot create folder for the machine file: " + std::strerror(errno));
  }
  return WriteFileAtomic(path, CeilingsToJson(c));
}

StatusOr<std::optional<MachineCeilings>> ResolveCeilings(const std::string& machine_file,
                                                         double peak_gflops, double peak_gbps,
                                                         const CpuStamp* here) {
  std::optional<MachineCeilings> c;
  std::string origin = machine_file;
  if (!machine_file.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(MachineCeilings m, LoadMachineFile(machine_file));
    c = m;
  } else {
    std::string def = DefaultMachineFile();
    if (!def.empty() && access(def.c_str(), R_OK) == 0) {
      OPSCOPE_ASSIGN_OR_RETURN(MachineCeilings m, LoadMachineFile(def));
      c = m;
      origin = def;
    }
  }
  // Both roofs given by hand replace the file entirely: nothing of it to check.
  if (c && !(peak_gflops > 0 && peak_gbps > 0)) {
    CpuStamp this_cpu;
    if (!here) this_cpu = ThisCpuStamp();
    std::string note;
    OPSCOPE_RETURN_IF_ERROR(CheckCeilingsCpu(*c, here ? *here : this_cpu, origin, &note));
    c->verification =
        note.empty() ? (c->method == "manual" ? "" : "same CPU") : "unverified: " + note;
  }
  if (peak_gflops > 0 || peak_gbps > 0) {
    if (!c) {
      c = MachineCeilings{};
      c->method = "manual";
    } else {
      c->method = "measured+manual";
    }
    if (peak_gflops > 0) c->peak_gflops_all = c->peak_gflops_one = peak_gflops;
    if (peak_gbps > 0) c->triad_gbps = peak_gbps;
    if (!c->Usable())
      return InvalidArgument(std::string("a roofline needs both roofs: pass ") +
                             (peak_gflops > 0 ? "--peak-gbps" : "--peak-gflops") +
                             " too, or run `opscope machine` first");
  }
  if (c && !c->Usable()) return std::optional<MachineCeilings>();
  return c;
}

MachineCeilings MeasureMachine(const MeasureOptions& opts) {
  MachineCeilings c;
  HostInfo host = ReadHostInfo();
  int threads = opts.threads > 0 ? opts.threads : std::max(1, host.logical_cpus);
  c.threads = threads;
  CpuStamp stamp = ThisCpuStamp();
  c.cpu_model = stamp.model;
  c.cpu_flags = stamp.flags;
  c.cpus = stamp.cpus;
  c.repeats = opts.repeats;
  c.method = "measured";
  c.measured_at = IsoTimeNow();
  size_t llc = LastLevelCacheBytes();
  c.llc_bytes = static_cast<double>(llc);
  double spread[4] = {0, 0, 0, 0};
  const char* names[4] = {"peak float32, one core", "peak float32, all cores",
                          "memory bandwidth (triad, DRAM)", "memory bandwidth (triad, LLC)"};
  int figure = 0;
  auto next = [&](const char* what) {
    if (opts.progress) opts.progress(what, figure, 6);
    ++figure;
  };
  next("peak float32, one core");
  c.peak_gflops_one = MeasurePeakGflops(1, opts.seconds_per_test, opts.repeats, &spread[0]);
  next("peak float32, all cores");
  c.peak_gflops_all =
      threads == 1 ? c.peak_gflops_one
                   : MeasurePeakGflops(threads, opts.seconds_per_test, opts.repeats, &spread[1]);
  next("peak int8, one core");
  c.peak_gops_int8_one = MeasurePeakGopsInt8(1, opts.seconds_per_test, opts.repeats);
  next("peak int8, all cores");
  c.peak_gops_int8_all = threads == 1
                             ? c.peak_gops_int8_one
                             : MeasurePeakGopsInt8(threads, opts.seconds_per_test, opts.repeats);
  size_t dram = opts.dram_bytes_per_array;
  if (dram == 0) dram = std::max<size_t>(8 * llc, 64u << 20);
  next("memory bandwidth, DRAM");
  c.triad_gbps = MeasureTriadGbps(dram, threads, opts.seconds_per_test, opts.repeats, &spread[2]);
  // Three arrays sharing half of the LLC, so they stay resident.
  size_t in_llc = llc > 0 ? llc / 6 : (256u << 10);
  next("memory bandwidth, LLC");
  c.llc_gbps = MeasureTriadGbps(in_llc, threads, opts.seconds_per_test, opts.repeats, &spread[3]);
  if (opts.progress) opts.progress("done", 6, 6);
  int worst = static_cast<int>(std::max_element(spread, spread + 4) - spread);
  c.spread_pct = spread[worst];
  c.spread_of = names[worst];
  return c;
}

}  // namespace opscope::analysis
