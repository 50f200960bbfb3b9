// Call-stack sampling with perf_event_open: `opscope record -- CMD` and the in-process sampler
// behind `opscope profile --sample`.
//
// Design. A sampling session is a set of perf events, each with its own mmap ring, drained by one
// thread that polls them and turns kernel records into raw events (record_file.h) written as
// chunks: to the record file as it goes (record) or to memory (in-process). Unwinding and
// symbolization happen afterwards (symbolize.h), while the binaries are still on disk, so the
// drain thread only copies bytes and keeps up at high rates.
//
// Which events: `cycles` where the CPU has a PMU, `cpu-clock` otherwise (the fallback is recorded
// in the degradations). Both are sampled in frequency mode, user space only (exclude_kernel, so
// perf_event_paranoid=2 suffices), timestamps on CLOCK_MONOTONIC.
//
// Which tasks: a command is followed with one event per online CPU opened on the child's pid with
// inherit=1 and enable_on_exec=1, which covers every thread and child process it ever creates
// (inherit=1 events cannot be mmapped with cpu=-1). The in-process sampler cannot use inherit for
// threads that already exist, so it opens one event per thread and rescans /proc/self/task every
// poll round (threads living less than one round, ~50 ms, can be missed).
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"
#include "collect/attach.h"
#include "collect/perf_event.h"
#include "collect/record_file.h"
#include "profile/samples.h"

namespace opscope::collect {

struct SamplerOptions {
  double frequency_hz = 997;  // prime: does not run in step with 1 kHz / 100 Hz timers
  CallGraph call_graph = CallGraph::kFramePointer;
  uint32_t stack_bytes = 16384;       // DWARF mode: user stack copied per sample (multiple of 8)
  size_t ring_pages = 256;            // data pages per ring (power of two)
  bool try_cycles = true;             // false: go straight to cpu-clock
  PerfEventOpener* opener = nullptr;  // the kernel call; SystemOpener() when null (tests: a fake)
};

// What a sampling session follows: each task on each CPU (`cpus` empty: one event per task,
// cpu=-1). tasks == {-1} with cpus: every task on those CPUs (system-wide, `record -a`).
struct SampleTarget {
  std::vector<pid_t> tasks;
  std::vector<int> cpus;
  bool inherit = false;         // follow the tasks' future threads and children
  bool enable_on_exec = false;  // start at the task's next execve() (a launched command)
};

// Opens one sampling event per (task, CPU) through the fallback ladder of perf_event.h
// (OpenWithFallback: cycles -> cpu-clock where there is no PMU, recorded in meta->degradations;
// a refusal names perf_event_paranoid and the fix). The first open decides the event; the others
// use the same attr (*attr). A task other than the first that is gone (ESRCH) is skipped.
// Returns the fds, which the caller owns; fills meta->event and meta->unit.
StatusOr<std::vector<int>> OpenSampleEvents(const SamplerOptions& opt, const SampleTarget& target,
                                            perf_event_attr* attr, RecordMeta* meta);

// The perf_event_attr a sampling event is opened with (exposed so tests can check the intent on
// machines without a PMU). `cycles` selects PERF_COUNT_HW_CPU_CYCLES instead of cpu-clock.
perf_event_attr MakeSampleAttr(const SamplerOptions& opt, bool cycles, bool inherit,
                               bool enable_on_exec);

// Registers copied per sample in DWARF mode on this architecture (perf_regs layout), 0 where
// DWARF unwinding is not supported.
uint64_t UserRegsMask();

// Decodes one kernel record into `batch`. Returns false for records it does not keep.
// `lost` accumulates PERF_RECORD_LOST / LOST_SAMPLES counts.
bool DecodePerfRecord(const perf_event_header* rec, const perf_event_attr& attr, EventBatch* batch,
                      uint64_t* samples, uint64_t* lost);

// The raw view of a sampled record (for tests and the drain thread).
bool ParseSample(const perf_event_header* rec, const perf_event_attr& attr, RawSample* out);

struct RecordOptions {
  SamplerOptions sampler;
  std::string output;  // record file path
};

struct RecordResult {
  std::string exit;      // "exited with status 0", "killed by signal 11 (Segmentation fault)"
  int exit_code = 0;     // the command's status, 128+signal when killed
  int term_signal = 0;   // the signal that ended it, 0 if it exited
  uint64_t samples = 0;  // written to the file (those before the failure when write_error is set)
  uint64_t lost = 0;
  RecordMeta meta;
  int64_t wall_ns = 0;
  // Non-OK when writing the file failed (disk full): sampling stopped then, the command ran on,
  // and the file holds the first kept_ns of the run (writer->bytes_kept() bytes).
  Status write_error;
  int64_t kept_ns = 0;
  // Non-OK when the command could not be started (ResolveCommand / exec errors of
  // base/launch.h): nothing ran; ExitCodeForStartError gives the exit status (127 or 126).
  Status exec_error;
};

// Runs `argv` (argv[0] looked up in PATH; started by base/launch.h, a start or exec error is
// given in RecordResult::exec_error) and samples it and everything it spawns until it exits,
// writing raw events to `writer` as it goes. The caller symbolizes afterwards (FinishRecording).
// SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to opscope go to the command's process group
// (base/target_signals.h; a local TargetSignals when `signals` is null), so opscope outlives the
// command and finishes the file.
StatusOr<RecordResult> RecordCommand(const std::vector<std::string>& argv, const RecordOptions& opt,
                                     RecordWriter* writer, TargetSignals* signals = nullptr);

// `record -p/-t/-a/-C`: samples what `what` names (attach.h: ResolveAttach) until WaitForStop
// (--duration, a signal opscope received, or every attached process exited), without signalling
// the attached processes. Mappings and thread names that existed before are synthesized from
// /proc; threads the processes create meanwhile are followed. result.exit says what stopped it.
StatusOr<RecordResult> RecordAttached(const AttachSpec& spec, const ResolvedAttach& what,
                                      const RecordOptions& opt, RecordWriter* writer,
                                      const TargetSignals& signals);

// Samples every thread of the calling process (threads created later included) between Start()
// and Stop(); the engine's `profile --sample` brackets its measured runs with it.
class Sampler {
 public:
  ~Sampler();
  static StatusOr<std::unique_ptr<Sampler>> Start(const SamplerOptions& opt);
  // Stops sampling and unwinds + symbolizes what was collected. Samples carry time_ns on
  // CLOCK_MONOTONIC (NowNs()), so AttributeSamplesToOps can match them to Profile::op_events.
  StatusOr<profile::SampleSection> Stop();
  // Degradations met while starting (e.g. "cycles unavailable ...: sampling cpu-clock").
  const std::vector<std::string>& degradations() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace opscope::collect
