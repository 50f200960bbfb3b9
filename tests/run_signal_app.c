/* An annotated program that closes three "frame" ranges, opens "doomed" and then dies:
 *   run_signal_app crash        writes through a null pointer (SIGSEGV)
 *   run_signal_app abort        calls abort() (SIGABRT)
 *   run_signal_app wait FILE    creates FILE once the ranges are recorded, then waits for a
 *                               signal (the tests send one after FILE appears)
 * The ranges closed before the end must reach `opscope run` all the same. */
#include <opscope/annotate.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile double sink;

static void Work(int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += i * 0.5;
  sink = s;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_signal_app crash|abort|wait FILE\n");
    return 2;
  }
  for (int frame = 0; frame < 3; ++frame) {
    opscope_range_push("frame");
    Work(100000);
    opscope_range_pop();
  }
  opscope_range_push("doomed");
  if (strcmp(argv[1], "crash") == 0) {
    /* An address read from the environment: the compiler cannot know it is null. */
    const char* addr = getenv("RUN_SIGNAL_APP_ADDR");
    *(volatile int*)(uintptr_t)strtoull(addr ? addr : "0", NULL, 0) = 1;
  } else if (strcmp(argv[1], "abort") == 0) {
    abort();
  } else if (strcmp(argv[1], "wait") == 0 && argc > 2) {
    FILE* f = fopen(argv[2], "w");
    if (f) fclose(f);
    for (;;) pause();
  }
  return 3;
}
