#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "engine/memory_limit.h"
#include "engine/model_fuzz.h"
#include "opscope/engine.h"

namespace opscope::engine {

void FuzzLoadModel(const uint8_t* data, size_t size) {
  int fd = memfd_create("opscope_fuzz_model", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t off = 0;
  while (off < size) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  // Tensors are capped well under the fuzzers' -rss_limit_mb=2048, so a model whose shapes ask
  // for more memory than there is ends in the engine's clean refusal, which is what a user gets
  // with the default limit (the machine's memory), rather than in an out-of-memory report. The
  // cap also bounds the work of one run: at 512 MiB a valid reflect Pad to ~100 M floats took 1 s
  // in a release build and over 10 s instrumented (libFuzzer's -timeout), a slow input, not a
  // bug (tests/fuzz_corpus/model_fuzz/timeout-reflect-pad-100m-floats.onnx); at 64 MiB the same
  // pattern to 16 M floats took 3.4 s instrumented, over 10 s of wall time at nice 19 on a loaded
  // machine (tests/fuzz_corpus/model_fuzz/timeout-reflect-pad-16m-floats.onnx).
  SetTensorMemoryLimit(size_t{16} << 20);
  // A data-dependent `while` Loop that random inputs never end ran 2 M iterations (32 s
  // instrumented, twice per input) before its scan output met the tensor cap: a slow input, not
  // a bug. At ~100 us per instrumented iteration 10 k iterations bound it to about a second.
  SetLoopIterationLimit(10000);
  // Work is bounded per step, at the shapes of the run: before the first run only the inputs'
  // shapes are known. A 253-byte model of two ConvTransposes whose weight is their own input
  // ([1, N, 65535]) took 107 s instrumented (8.6e9 FLOPs at the first, 3.4e10 at the second); at
  // 2e7 FLOPs a step stays in milliseconds
  // (tests/fuzz_corpus/model_struct_fuzz/slow-convtranspose-own-weight.onnx).
  constexpr double kMaxElements = 1 << 20, kMaxFlops = 2e7;
  SetStepFlopLimit(kMaxFlops);
  // And per run, all steps together: a Loop of 10 k iterations, each step 1.3e5 FLOPs, ran 88 s
  // instrumented (tests/fuzz_corpus/model_struct_fuzz/slow-loop-10k-iterations-of-1e5-flops.onnx).
  SetRunWorkLimit(5 * kMaxFlops);
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::Load(path, opt);
  close(fd);
  if (!s.ok()) return;
  // Inputs with many elements are not filled at all (symbolic dimensions are 1 by now).
  double elements = 0;
  for (const ValueSpec& v : (*s)->Inputs()) {
    double e = 1;
    for (int64_t d : v.shape) e *= d < 0 ? kMaxElements : static_cast<double>(d);
    elements += e;
  }
  if (elements > kMaxElements) return;
  if (!(*s)->FillRandomInputs(1).ok()) return;
  // The first run is the planning run (every value allocated, all NCHW); the passes after it
  // (folding what it made constant, views, the activation arena, channels-last regions) change
  // how every later run executes, so a second run checks the path users measure.
  if (!(*s)->Run().ok()) return;
  (void)(*s)->Run();
}

}  // namespace opscope::engine
