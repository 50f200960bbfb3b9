// A checker for Chrome Trace Event documents: what Perfetto, chrome://tracing and speedscope need
// to draw a trace as it was meant, checked the way they read it. Tests run it over every trace
// opscope writes (op profiles, range profiles, recordings, GPU traces, diffs).
//
// Rules (the Trace Event Format document, and Perfetto's JSON importer, which turns `ts` and `dur`
// in µs into integer ns with llround(x * 1000)):
// - the document is an object whose "traceEvents" array holds at least one event that is not
//   metadata ("M") — an empty trace is refused by the writer, never written;
// - every event has "ph" and "name" (strings) and integer "pid" and "tid"; every event but
//   metadata has a number "ts" >= 0;
// - "ts" and "dur" are whole nanoseconds written in µs (at most three decimals), so that every
//   reader gets the same integers;
// - complete slices ("X") have "dur" >= 0 and nest exactly per thread (pid, tid): a slice that
//   starts inside another ends inside it, in integer ns — a child that ends 1 ns after its parent
//   is what makes Perfetto cut it and speedscope draw a staircase;
// - begin/end pairs ("B"/"E") are balanced per thread with non-decreasing "ts", and nest with the
//   thread's complete slices;
// - instant events ("i"/"I") have scope "s" of "t", "p" or "g" when given; counters ("C") have an
//   object of numbers as "args";
// - every process with events has a "process_name" and every thread with slices or instants a
//   "thread_name" metadata event (so no track is shown as a bare number).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace opscope::report {

struct TraceSummary {
  int64_t slices = 0;       // "X" events and "B"/"E" pairs
  int64_t zero_length = 0;  // slices with dur 0
  int64_t instants = 0;     // "i"/"I"
  int64_t counters = 0;     // "C"
  int64_t metadata = 0;     // "M"
  int64_t threads = 0;      // (pid, tid) with slices or instants
  int max_depth = 0;        // deepest nesting of slices on one thread (1 = top level only)
};

// OK with a summary when `json_text` follows every rule above; else an error listing the first
// problems found (event index, name and rule).
StatusOr<TraceSummary> CheckChromeTrace(std::string_view json_text);

}  // namespace opscope::report
