// opscope record [-F HZ] [--call-graph fp|dwarf[,BYTES]] [-o FILE] -- CMD [ARGS]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "base/clock.h"
#include "base/files.h"
#include "base/launch.h"
#include "base/strings.h"
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/target_build.h"
#include "collect/attach.h"
#include "collect/counter_run.h"
#include "collect/record_file.h"
#include "collect/sampler.h"
#include "collect/symbolize.h"
#include "report/say.h"

namespace opscope::cli {
namespace {

class RecordCommandCli : public Command {
 public:
  const char* Name() const override { return "record"; }
  const char* Help() const override {
    return "sample the call stacks of a command and all its threads into a record file";
  }
  void Setup(CLI::App* app) override {
    AddSysrootOption(app);
    app->add_option("-F,--freq", freq_text_,
                    "Sampling frequency in Hz, 1 to 100000, or max (the kernel's "
                    "perf_event_max_sample_rate, as perf record -F max; default 997)")
        ->check(FrequencyCheck());
    app->add_option("--call-graph", call_graph_,
                    "fp (frame pointers) or dwarf[,STACK_BYTES] (libdw unwinding; works without "
                    "frame pointers; default 16384 bytes of stack per sample)");
    app->add_flag("-g", call_graph_flag_,
                  "Call graphs with frame pointers, as perf record -g (the default; "
                  "--call-graph picks the mode)");
    app->add_option("-o,--output", output_, "Record file to write (default opscope.rec)");
    app->add_option("-e,--event,--events", event_,
                    "auto (cycles if there is a PMU, else cpu-clock) or cpu-clock");
    app->add_option("-m,--mmap-pages", ring_pages_,
                    "Ring buffer data pages per CPU (power of two, default 256)")
        ->check(WholeNumberIn(1, 1 << 20));
    app->add_option("-p,--pid", pids_,
                    "Attach to running processes PID[,PID...] (all their threads)")
        ->check(NonEmpty());
    app->add_option("-t,--tid", tids_, "Attach to threads TID[,TID...]")->check(NonEmpty());
    app->add_flag("-a,--all-cpus", attach_.all_cpus, "System-wide: every task on every CPU");
    app->add_option("-C,--cpu", cpus_, "System-wide on these CPUs only (e.g. 0-3,6)")
        ->check(NonEmpty());
    app->add_option("--duration", attach_.duration_s,
                    "With -p/-t/-a/-C: stop after S seconds (default: Ctrl-C, SIGINT or "
                    "SIGTERM, or when the processes exit)")
        ->check(NumberIn(0, 1e7, false));
    app->add_option("command", command_, "The command to run (after --)");
  }
  CommandStatus Run() override {
    collect::RecordOptions opt;
    if (freq_text_ == "max") {
      auto max = MaxSampleRate();
      if (!max.ok()) return max.status();
      freq_ = *max;
      report::Say("", fmt::format("-F max: {:.0f} Hz (kernel.perf_event_max_sample_rate)", freq_));
    } else if (!freq_text_.empty()) {
      ParseDouble(freq_text_, &freq_);  // checked by FrequencyCheck
    }
    opt.sampler.frequency_hz = freq_;
    opt.sampler.ring_pages = ring_pages_;
    if (event_ == "cpu-clock") {
      opt.sampler.try_cycles = false;
    } else if (event_ != "auto" && event_ != "cycles") {
      return InvalidArgument("--event '" + event_ + "': expected auto, cycles or cpu-clock");
    }
    auto parts = Split(call_graph_, ',');
    if (parts[0] == "dwarf") {
      opt.sampler.call_graph = collect::CallGraph::kDwarf;
      int64_t bytes = 0;
      if (parts.size() > 1) {
        if (!ParseInt64(parts[1], &bytes) || bytes < 512 || bytes > 65000)
          return InvalidArgument("--call-graph dwarf," + parts[1] +
                                 ": the stack size must be a whole number of bytes "
                                 "from 512 to 65000");
        opt.sampler.stack_bytes = static_cast<uint32_t>((bytes + 7) / 8 * 8);
      }
    } else if (parts[0] != "fp" || parts.size() > 1) {
      return InvalidArgument("--call-graph '" + call_graph_ + "': expected fp or dwarf[,BYTES]");
    }
    opt.output = output_;
    auto what = ResolveAttachOptions();
    if (!what.ok()) return what.status();
    const bool attached = attach_.any();
    TargetSignals signals;
    auto writer = collect::RecordWriter::Create(output_);
    if (!writer.ok()) return writer.status();
    auto result = attached ? collect::RecordAttached(attach_, *what, opt, writer->get(), signals)
                           : collect::RecordCommand(command_, opt, writer->get(), &signals);
    if (!result.ok()) {
      const bool nothing = (*writer)->failed() && (*writer)->nothing_kept();
      (*writer)->Discard();
      return nothing ? NothingWritten(**writer) : result.status();
    }
    if (!result->exec_error.ok()) {
      (*writer)->Discard();
      return StartError(result->exec_error);
    }
    for (const auto& d : result->meta.degradations) report::Say("note", d);
    const int got = signals.received();
    if (got != 0 && !attached)
      report::Say("", "received " + collect::SignalName(got) +
                          ": passed it to the command; writing what was recorded");
    if (!result->write_error.ok()) return ReportPartial(*result, writer->get(), got);
    collect::RecordEnd end{result->exit, result->exit_code, result->samples, result->lost};
    Status st = (*writer)->WriteEnd(end);
    if (!st.ok()) return ReportKeptSamples(st, *result, writer->get());
    if (!report::Quiet() && !attached) {
      profile::Meta target;
      analysis::BuildVerdict v = RecordTargetBuild(command_[0], &target);
      if (v.kind != "release") report::Say("note", "target build: " + v.evidence);
    }
    // Symbolize now, while the binaries the command ran are certainly on disk.
    int64_t t0 = NowNs();
    auto reader = collect::RecordReader::Open(output_);
    if (!reader.ok()) return reader.status();
    auto section = collect::Symbolize(*reader);
    if (!section.ok()) return section.status();
    st = (*writer)->WriteSymbolized(*section);
    if (!st.ok()) return ReportKeptSamples(st, *result, writer->get());
    st = (*writer)->Close();
    if (!st.ok()) return st;
    double symbolize_s = (NowNs() - t0) / 1e9;
    report::Say("", (attached ? what->description : command_[0]) + ": " + result->exit);
    report::Say("", fmt::format("{} samples ({}, {} call graphs, {:.0f} Hz), {} lost; symbolized "
                                "in {:.2f} s; wrote {}",
                                result->samples, result->meta.event,
                                collect::CallGraphName(opt.sampler.call_graph),
                                opt.sampler.frequency_hz, result->lost, symbolize_s, output_));
    report::Say("", "run `opscope report " + ShellQuote(output_) + "`");
    if (result->lost)
      report::Say("warning", fmt::format("{} samples were lost (ring buffer overflow); lower -F "
                                         "or raise -m",
                                         result->lost));
    for (const auto& w : section->warnings)
      if (w.find("no debug info") != std::string::npos || w.find("lost") != std::string::npos)
        report::Say("note", w);
    // Attached: stopping by a signal is the normal way to end, not a failure.
    return attached ? 0 : TargetExitCode(result->exit_code, got);
  }

 private:
  // -p/-t/-a/-C: what to attach to, checked (processes exist, permissions) before anything opens.
  StatusOr<collect::ResolvedAttach> ResolveAttachOptions() {
    return collect::ResolveAttachFlags(
        {pids_, tids_, cpus_, !command_.empty(), "use `opscope record -- CMD [ARGS]`"}, &attach_);
  }

  static Status NothingWritten(const collect::RecordWriter& w) {
    return ResourceExhausted(w.failure().message() +
                             "; nothing could be written, so no record "
                             "file was left: free some space or write elsewhere with -o");
  }

  // The disk filled up after every sample was written (at the end or symbol chunk): the samples
  // are all there, `report` symbolizes them itself.
  CommandStatus ReportKeptSamples(const Status& st, const collect::RecordResult& r,
                                  collect::RecordWriter* w) {
    (void)w->Close();
    return CommandStatus(st).AndThen(fmt::format(
        "all {} samples were kept ({} bytes in {}), without symbols; run `opscope report {}`",
        r.samples, w->bytes_kept(), output_, ShellQuote(output_)));
  }

  // The disk filled up (or the file size limit was reached) while recording: the file keeps the
  // whole chunks written before, which `opscope report` reads (it symbolizes them itself).
  CommandStatus ReportPartial(const collect::RecordResult& r, collect::RecordWriter* w, int got) {
    if (w->nothing_kept()) {
      w->Discard();
      return NothingWritten(*w);
    }
    if (r.samples == 0) {  // only the header and metadata: not a profile
      w->Discard();
      return ResourceExhausted(w->failure().message() +
                               "; no sample could be "
                               "written, so no record file was left: free some space "
                               "or write elsewhere with -o");
    }
    (void)w->Close();
    CommandStatus error =
        CommandStatus(r.write_error)
            .AndThen(fmt::format("sampling stopped {:.2f} s into the run; kept the readable part: "
                                 "{} samples, {} bytes in "
                                 "{} (the command {}); run `opscope report {}`",
                                 static_cast<double>(r.kept_ns) / 1e9, r.samples, w->bytes_kept(),
                                 output_, r.exit, ShellQuote(output_)));
    if (got != 0) return std::move(error).WithExitCode(TargetExitCode(r.exit_code, got));
    return error;
  }

  // -F: a number (FrequencyCheck) or "max".
  static CLI::Validator FrequencyCheck() {
    CLI::Validator number = NumberIn(1, 100000, false);
    return CLI::Validator(
        [number](std::string& text) -> std::string {
          if (text == "max") return "";
          std::string copy = text;
          std::string why = number(copy);
          return why.empty() ? "" : why + " or max";
        },
        "a number from 1 to 100000, or max");
  }
  // perf record -F max: the rate the kernel allows (it lowers the sysctl itself when sampling
  // takes too long), capped at 100000 Hz like -F.
  static StatusOr<double> MaxSampleRate() {
    const char* path = "/proc/sys/kernel/perf_event_max_sample_rate";
    auto text = ReadFile(path);
    int64_t rate = 0;
    if (!text.ok() || !ParseInt64(Trim(*text), &rate) || rate < 1)
      return Unavailable(std::string("-F max: cannot read ") + path +
                         "; give the frequency in Hz (-F 997)");
    return static_cast<double>(std::min<int64_t>(rate, 100000));
  }

  std::string freq_text_;
  double freq_ = 997;
  bool call_graph_flag_ = false;  // -g: frame pointers unless --call-graph says otherwise
  std::string call_graph_ = "fp";
  std::string output_ = "opscope.rec";
  std::string event_ = "auto";
  size_t ring_pages_ = 256;
  std::vector<std::string> command_;
  std::string pids_, tids_, cpus_;
  collect::AttachSpec attach_;
};

}  // namespace
}  // namespace opscope::cli

using opscope::cli::RecordCommandCli;
OPSCOPE_REGISTER_COMMAND(RecordCommandCli);
