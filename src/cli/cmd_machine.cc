// `opscope machine`: measure (or set by hand) this machine's roofline ceilings and store them.
#include <fmt/format.h>

#include <cstdio>

#include "analysis/format.h"
#include "analysis/machine_measure.h"
#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "collect/attach.h"
#include "report/say.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::cli {

class MachineCommand : public Command {
 public:
  const char* Name() const override { return "machine"; }
  const char* Help() const override {
    return "measure this machine's ceilings (peak GFLOP/s, memory GB/s) for the roofline";
  }
  void Setup(CLI::App* app) override {
    AddSysrootOption(app);
    app->add_option("--machine", file_,
                    "machine file to write/read (default $XDG_CONFIG_HOME/opscope/machine.json)");
    app->add_option("--threads", threads_,
                    "threads for the all-core figures (default: all online CPUs)")
        ->check(WholeNumberIn(1, 4096));
    app->add_option("--peak-gflops", peak_gflops_,
                    "peak float32 GFLOP/s given by hand (e.g. a target board's)")
        ->check(PositiveFinite());
    app->add_option("--peak-gbps", peak_gbps_, "memory bandwidth in GB/s given by hand")
        ->check(PositiveFinite());
    app->add_option("--cpu-model", cpu_model_, "CPU model to record with hand-given ceilings");
    app->add_option("--cpus", cpus_,
                    "measure on these CPUs only, e.g. 4-7 for one cluster of a big.LITTLE board "
                    "(the all-core figures then use one thread per CPU given)");
    app->add_flag("--quick", quick_, "shorter measurement (less stable)");
    app->add_flag("--force", force_,
                  "store the ceilings even when the repeats disagree (a noisy machine)");
    app->add_flag("--show", show_, "print the stored ceilings without measuring");
    app->add_option("--format", format_, "table or json")->check(CLI::IsMember({"table", "json"}));
  }

  CommandStatus Run() override {
    std::string path = file_.empty() ? analysis::DefaultMachineFile() : file_;
    HostInfo host = ReadHostInfo();
    analysis::MachineCeilings c;
    if (show_) {
      if (path.empty())
        return NotFound("no machine file: HOME and XDG_CONFIG_HOME are unset; pass --machine FILE");
      auto loaded = analysis::LoadMachineFile(path);
      if (!loaded.ok())
        return loaded.status().WithPrefix("no stored ceilings (run `opscope machine` first)");
      c = *loaded;
    } else {
      if (path.empty())
        return InvalidArgument("HOME and XDG_CONFIG_HOME are unset: pass --machine FILE");
      if (Status st = CheckWritable(path); !st.ok()) {
        // The folder may not exist yet: SaveMachineFile creates it; only a real refusal stops us.
        if (st.code() == StatusCode::kPermissionDenied) return st;
      }
      if (peak_gflops_ > 0 && peak_gbps_ > 0) {
        c.peak_gflops_all = c.peak_gflops_one = peak_gflops_;
        c.triad_gbps = peak_gbps_;
        c.method = "manual";
        c.cpu_model = cpu_model_.empty() ? "(given by hand)" : cpu_model_;
        c.measured_at = IsoTimeNow();
      } else {
        analysis::MeasureOptions o;
        o.threads = threads_;
        std::vector<int> pinned_list;
        if (!cpus_.empty()) {
          auto cpus = collect::ParseCpuList(cpus_, collect::OnlineCpus(), "--cpus");
          if (!cpus.ok()) return cpus.status();
          if (Status st = collect::PinProcess(*cpus); !st.ok()) return st;
          if (o.threads == 0) o.threads = static_cast<int>(cpus->size());
          pinned_list = *cpus;
          c.pinned_cpus = CpuRanges(pinned_list);
        }
        if (quick_) {
          o.seconds_per_test = 0.05;
          o.repeats = 3;
        }
        report::Say("", fmt::format("measuring peak FLOP/s and memory bandwidth ({})...",
                                    quick_ ? "quick" : "about 10 s"));
        const std::string pinned = c.pinned_cpus;
        Progress bar;
        o.progress = [&](const char* figure, int done, int total) {
          if (done == 0) bar.Phase("measuring", total);
          bar.Update(done, figure);
        };
        c = analysis::MeasureMachine(o);
        bar.Finish();
        c.pinned_cpus = pinned;
        c.core_types = telemetry::DescribeCores(telemetry::ReadCoreClusters(), pinned_list);
        if (peak_gflops_ > 0) c.peak_gflops_all = c.peak_gflops_one = peak_gflops_;
        if (peak_gbps_ > 0) c.triad_gbps = peak_gbps_;
        if (peak_gflops_ > 0 || peak_gbps_ > 0) c.method = "measured+manual";
        if (!cpu_model_.empty()) c.cpu_model = cpu_model_;
        // The noise check: ceilings measured while other processes competed for the CPU would
        // misplace every op on the roofline for as long as the file is used.
        if (Status st = analysis::CheckCeilingsStable(c); !st.ok()) {
          if (!force_) return st;
          std::string why = st.message();
          if (StartsWith(why, "ceilings not stored: ")) why = why.substr(21);
          why = why.substr(0, why.find(": other processes"));
          report::Say("warning", "storing unstable ceilings (--force): " + why);
        }
      }
      if (Status st = analysis::SaveMachineFile(c, path); !st.ok()) return st;
    }
    if (format_ == "json") {
      std::fputs(analysis::CeilingsToJson(c).c_str(), stdout);
    } else {
      std::string out;
      out +=
          fmt::format("{:<34} {:>10.1f} GFLOP/s{}\n", "peak float32, all cores", c.peak_gflops_all,
                      c.threads > 0 ? fmt::format(" ({} threads)", c.threads) : "");
      out += fmt::format("{:<34} {:>10.1f} GFLOP/s\n", "peak float32, one core", c.peak_gflops_one);
      if (c.peak_gops_int8_all > 0)
        out +=
            fmt::format("{:<34} {:>10.1f} GOP/s (int16-pair multiply-add, as the int8 kernels)\n",
                        "peak int8, all cores", c.peak_gops_int8_all);
      if (c.peak_gops_int8_one > 0)
        out += fmt::format("{:<34} {:>10.1f} GOP/s\n", "peak int8, one core", c.peak_gops_int8_one);
      out += fmt::format("{:<34} {:>10.1f} GB/s\n", "memory bandwidth (triad, DRAM)", c.triad_gbps);
      if (c.llc_gbps > 0)
        out += fmt::format("{:<34} {:>10.1f} GB/s (arrays of {} in a {} LLC)\n",
                           "memory bandwidth (triad, LLC)", c.llc_gbps, HumanBytes(c.llc_bytes / 6),
                           HumanBytes(c.llc_bytes));
      if (c.triad_gbps > 0)
        out += fmt::format("{:<34} {:>10.1f} FLOP/byte\n", "ridge point",
                           c.peak_gflops_all / c.triad_gbps);
      out += fmt::format("{:<34} {}\n", "cpu", c.cpu_model);
      if (!c.pinned_cpus.empty())
        out += fmt::format("{:<34} {}{}\n", "measured on cpus", c.pinned_cpus,
                           c.core_types.empty() ? "" : " (" + c.core_types + ")");
      out += fmt::format("{:<34} {} {}\n", "method", c.method, c.measured_at);
      if (c.repeats > 0)
        out += fmt::format("{:<34} {:.1f}% ({}; median below best of {} repeats)\n", "noise",
                           c.spread_pct, c.spread_of, c.repeats);
      if (c.cpus > 0 || !c.cpu_flags.empty())
        out += fmt::format("{:<34} {} CPUs, flags: {}\n", "cpu stamp", c.cpus,
                           c.cpu_flags.empty() ? "-" : c.cpu_flags);
      out += fmt::format("{:<34} {}\n", show_ ? "read from" : "stored in", path);
      std::fputs(out.c_str(), stdout);
    }
    std::string mismatch = analysis::CeilingsMismatch(c, host.cpu_model);
    if (!mismatch.empty() && c.method != "manual") report::Say("note", mismatch);
    return 0;
  }

 private:
  std::string file_, cpu_model_, format_ = "table", cpus_;
  int threads_ = 0;
  double peak_gflops_ = 0, peak_gbps_ = 0;
  bool quick_ = false, show_ = false, force_ = false;
};

OPSCOPE_REGISTER_COMMAND(MachineCommand);

}  // namespace opscope::cli
