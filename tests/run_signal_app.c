/* An annotated program that closes three "frame" ranges, opens "doomed" and then dies:
 *   run_signal_app crash        writes through a null pointer (SIGSEGV)
 *   run_signal_app abort        calls abort() (SIGABRT)
 *   run_signal_app overflow     recurses until its stack overflows (SIGSEGV with no stack left)
 *   run_signal_app overflow-thread  the same on a second thread that has recorded ranges
 *   run_signal_app wait FILE    creates FILE once the ranges are recorded, then waits for a
 *                               signal (the tests send one after FILE appears)
 *   run_signal_app sigkill      closes 1000 "many" ranges, waits until the recorder has written
 *                               them (a `flush` line after them in its file, at most 10 s), then
 *                               SIGKILLs itself
 *   run_signal_app fork-exit    a vfork()ed child and a fork()ed child that closes five
 *                               "child_frame" ranges end with _exit(0); the program exits 0
 * The ranges closed before the end must reach `opscope run` all the same. */
#include <opscope/annotate.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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

static long long NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* True once the recorder's file ($OPSCOPE_RANGES_OUT.annotate.<pid>) has a `flush <ns> <open>`
 * line with ns after `since`: everything closed before `since` is in the file. */
static int FlushedSince(long long since) {
  const char* out = getenv("OPSCOPE_RANGES_OUT");
  if (out == NULL) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.annotate.%d", out, (int)getpid());
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    long long ns = 0;
    found = sscanf(line, "flush %lld", &ns) == 1 && ns > since;
  }
  fclose(f);
  return found;
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
    fprintf(
        stderr,
        "usage: run_signal_app crash|abort|overflow|overflow-thread|wait FILE|sigkill|fork-exit\n");
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
  } else if (strcmp(argv[1], "sigkill") == 0) {
    for (int i = 0; i < 1000; ++i) {
      opscope_range_push("many");
      opscope_range_pop();
    }
    const long long closed = NowNs();
    for (int i = 0; i < 1000 && !FlushedSince(closed); ++i) usleep(10000);
    raise(SIGKILL);
  } else if (strcmp(argv[1], "fork-exit") == 0) {
    pid_t v = vfork(); /* the child shares the parent's memory: the recorder must stay out */
    if (v == 0) _exit(0);
    if (v > 0) waitpid(v, NULL, 0);
    pid_t c = fork();
    if (c == 0) {
      for (int i = 0; i < 5; ++i) {
        opscope_range_push("child_frame");
        Work(1000);
        opscope_range_pop();
      }
      _exit(0);
    }
    if (c > 0) waitpid(c, NULL, 0);
    opscope_range_pop();
    return 0;
  } else if (strcmp(argv[1], "abort") == 0) {
    abort();
  } else if (strcmp(argv[1], "wait") == 0 && argc > 2) {
    FILE* f = fopen(argv[2], "w");
    if (f) fclose(f);
    for (;;) pause();
  }
  return 3;
}
