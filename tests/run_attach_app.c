/* An annotated program that runs until told to stop, for `opscope run -p PID`:
 *   run_attach_app READY EXIT [GATE]
 * loops over "frame" ranges (each with a nested "work"), creates the file READY after its first
 * frame, and exits (status 0, with a range "last" still open) once the file EXIT exists; it gives
 * up after 120 s. With GATE, the first frame stays open (READY is created inside it) until the
 * file GATE exists, and then records its "work": a frame that began before opscope attached. */
#include <opscope/annotate.h>
#ifdef RUN_ATTACH_NVTX
#include <nvtx3/nvToolsExt.h>
/* The NVTX build (run_attach_nvtx_app): each frame is an NVTX range, its work opscope's. */
#define FRAME_PUSH() nvtxRangePushA("frame")
#define FRAME_POP() nvtxRangePop()
#else
#define FRAME_PUSH() opscope_range_push("frame")
#define FRAME_POP() opscope_range_pop()
#endif
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static void Work(int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += i * 0.5;
  sink = s;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: run_attach_app READY EXIT\n");
    return 2;
  }
  const time_t start = time(NULL);
  for (int frame = 0; time(NULL) - start < 120; ++frame) {
    FRAME_PUSH();
    if (frame == 0 && argc > 3) {
      FILE* f = fopen(argv[1], "w");
      if (f) fclose(f);
      while (access(argv[3], F_OK) != 0 && time(NULL) - start < 120) usleep(2000);
    }
    opscope_range_push("work");
    Work(20000);
    opscope_range_pop();
    FRAME_POP();
    if (frame == 0) {
      FILE* f = fopen(argv[1], "w");
      if (f) fclose(f);
    }
    if (access(argv[2], F_OK) == 0) {
      opscope_range_push("last");
      return 0;
    }
    usleep(2000);
  }
  return 3;
}
