// Event names: what the user types resolved into the (type, config) the kernel understands
// (perf_event.h, EventSpec and ParseEvent).
#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/strings.h"
#include "collect/perf_event.h"
#include "collect/perf_event_internal.h"

#ifdef OPSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

namespace opscope::collect {
namespace {

using perf_internal::Hex;

struct NamedConfig {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr NamedConfig kGenericEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
};

constexpr std::pair<const char*, uint64_t> kCaches[] = {
    {"L1-dcache", PERF_COUNT_HW_CACHE_L1D}, {"L1-icache", PERF_COUNT_HW_CACHE_L1I},
    {"LLC", PERF_COUNT_HW_CACHE_LL},        {"dTLB", PERF_COUNT_HW_CACHE_DTLB},
    {"iTLB", PERF_COUNT_HW_CACHE_ITLB},     {"branch", PERF_COUNT_HW_CACHE_BPU},
    {"node", PERF_COUNT_HW_CACHE_NODE},
};
constexpr std::pair<const char*, uint64_t> kCacheOps[] = {
    {"load", PERF_COUNT_HW_CACHE_OP_READ},         {"loads", PERF_COUNT_HW_CACHE_OP_READ},
    {"store", PERF_COUNT_HW_CACHE_OP_WRITE},       {"stores", PERF_COUNT_HW_CACHE_OP_WRITE},
    {"prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH}, {"prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH},
};

// "L1-dcache-load-misses" -> (L1D, READ, MISS); "LLC-loads" -> (LL, READ, ACCESS).
bool ParseCacheEvent(std::string_view name, uint64_t* config) {
  for (const auto& [cache, cache_id] : kCaches) {
    std::string prefix = std::string(cache) + "-";
    if (!StartsWith(name, prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    uint64_t result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
    if (EndsWith(rest, "-misses")) {
      result = PERF_COUNT_HW_CACHE_RESULT_MISS;
      rest.remove_suffix(7);
    } else if (EndsWith(rest, "-miss")) {
      result = PERF_COUNT_HW_CACHE_RESULT_MISS;
      rest.remove_suffix(5);
    }
    for (const auto& [op, op_id] : kCacheOps) {
      if (rest == op) {
        *config = cache_id | (op_id << 8) | (result << 16);
        return true;
      }
    }
  }
  return false;
}

#ifdef OPSCOPE_HAVE_LIBPFM
bool ResolveWithLibpfm(const std::string& name, EventSpec* spec, std::string* error) {
  static const int init = pfm_initialize();
  if (init != PFM_SUCCESS) {
    *error = std::string("libpfm4 failed to initialize: ") + pfm_strerror(init);
    return false;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof(arg));
  arg.attr = &attr;
  arg.size = sizeof(arg);
  int rc = pfm_get_os_event_encoding(name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
  if (rc != PFM_SUCCESS) {
    *error = pfm_strerror(rc);
    return false;
  }
  spec->type = attr.type;
  spec->config = attr.config;
  spec->config1 = attr.config1;
  spec->config2 = attr.config2;
  return true;
}
#endif

bool IsHex(std::string_view s) {
  return !s.empty() && s.size() <= 16 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

bool EventSpec::NeedsPmu() const {
  return type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE || type == PERF_TYPE_RAW ||
         type >= PERF_TYPE_MAX;
}

bool EventSpec::IsTime() const {
  return type == PERF_TYPE_SOFTWARE &&
         (config == PERF_COUNT_SW_TASK_CLOCK || config == PERF_COUNT_SW_CPU_CLOCK);
}

StatusOr<EventSpec> ParseEvent(std::string_view input) {
  std::string text = Trim(input);
  if (text.empty()) return InvalidArgument("empty event name in the event list");
  EventSpec spec;
  std::string base = text;
  // A trailing ":u", ":k", ":uk" is perf's privilege-level modifier. libpfm names use ':' for
  // their own attributes ("RETIRED_UOPS:u=1"), so only these exact suffixes are taken here.
  for (std::string_view mod : {":uk", ":ku", ":u", ":k"}) {
    if (EndsWith(base, mod)) {
      base = base.substr(0, base.size() - mod.size());
      bool u = mod.find('u') != std::string_view::npos, k = mod.find('k') != std::string_view::npos;
      spec.exclude_user = !u;
      spec.exclude_kernel = !k;
      spec.exclude_hv = true;
      break;
    }
  }
  spec.name = text;
  for (const NamedConfig& e : kGenericEvents) {
    if (base == e.name) {
      spec.type = e.type;
      spec.config = e.config;
      return spec;
    }
  }
  uint64_t cache_config = 0;
  if (ParseCacheEvent(base, &cache_config)) {
    spec.type = PERF_TYPE_HW_CACHE;
    spec.config = cache_config;
    return spec;
  }
  if (base.size() > 1 && base[0] == 'r' && IsHex(std::string_view(base).substr(1))) {
    spec.type = PERF_TYPE_RAW;
    spec.config = std::strtoull(base.c_str() + 1, nullptr, 16);
    return spec;
  }
  std::string pfm_error = "opscope was built without libpfm4, so CPU-specific names are unknown";
#ifdef OPSCOPE_HAVE_LIBPFM
  spec.exclude_user = spec.exclude_kernel = spec.exclude_hv = false;
  spec.name = text;
  if (ResolveWithLibpfm(text, &spec, &pfm_error)) return spec;
#endif
  return InvalidArgument("unknown event '" + text + "' (" + pfm_error +
                         "); use a generic name (cycles, instructions, cache-misses, "
                         "task-clock, page-faults, ...), a hw-cache name "
                         "(L1-dcache-load-misses), a raw code rNNNN, or see `perf list`");
}

StatusOr<std::vector<EventSpec>> ParseEventList(std::string_view list) {
  std::vector<EventSpec> out;
  for (const std::string& part : Split(list, ',', /*skip_empty=*/true)) {
    OPSCOPE_ASSIGN_OR_RETURN(EventSpec spec, ParseEvent(part));
    out.push_back(std::move(spec));
  }
  if (out.empty()) return InvalidArgument("empty event list: give -e with at least one event");
  return out;
}

static std::vector<EventSpec> ParseFixed(std::initializer_list<const char*> names) {
  std::vector<EventSpec> out;
  for (const char* n : names) out.push_back(*ParseEvent(n));
  return out;
}

std::vector<EventSpec> DefaultStatEvents() {
  return ParseFixed({"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles",
                     "instructions", "branches", "branch-misses", "cache-references",
                     "cache-misses", "L1-dcache-load-misses", "LLC-load-misses"});
}

std::vector<EventSpec> DefaultOpEvents() {
  return ParseFixed({"cycles", "instructions", "cache-misses", "branch-misses", "task-clock",
                     "page-faults", "context-switches"});
}

}  // namespace opscope::collect
