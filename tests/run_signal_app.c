/* An annotated program that closes three "frame" ranges, opens "doomed" and then dies:
 *   run_signal_app crash        writes through a null pointer (SIGSEGV)
 *   run_signal_app abort        calls abort() (SIGABRT)
 *   run_signal_app overflow     recurses until its stack overflows (SIGSEGV with no stack left)
 *   run_signal_app overflow-thread  the same on a second thread that has recorded ranges
 *   run_signal_app wait FILE    creates FILE once the ranges are recorded, then waits for a
 *                               signal (the tests send one after FILE appears)
 * The ranges closed before the end must reach `opscope run` all the same. */
#include <opscope/annotate.h>
#include <pthread.h>
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

/* 4 KiB of stack per call; the guard keeps the compiler from proving the recursion endless. */
static int Deep(int n) {
  volatile char pad[4096];
  pad[0] = (char)n;
  if (n < 0) return 0;
  return Deep(n + 1) + pad[0];
}

static void* OverflowThread(void* arg) {
  (void)arg;
  opscope_range_push("thread_frame");
  Work(1000);
  opscope_range_pop();
  sink = Deep(0);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_signal_app crash|abort|overflow|overflow-thread|wait FILE\n");
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
  } else if (strcmp(argv[1], "overflow") == 0) {
    sink = Deep(0);
  } else if (strcmp(argv[1], "overflow-thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, OverflowThread, NULL) == 0) pthread_join(t, NULL);
  } else if (strcmp(argv[1], "abort") == 0) {
    abort();
  } else if (strcmp(argv[1], "wait") == 0 && argc > 2) {
    FILE* f = fopen(argv[2], "w");
    if (f) fclose(f);
    for (;;) pause();
  }
  return 3;
}
