// For tests of the real kernel: skip, saying why, where perf_event_open does not exist (qemu-user
// runs the aarch64 build's tests; see scripts/test-arm64.sh).
#pragma once

#include <gtest/gtest.h>

#include "collect/perf_event.h"

#define OPSCOPE_SKIP_WITHOUT_PERF_EVENTS()                    \
  do {                                                        \
    if (!::opscope::collect::PerfEventOpenImplemented())      \
      GTEST_SKIP() << ::opscope::collect::NoPerfEventsText(); \
  } while (0)
