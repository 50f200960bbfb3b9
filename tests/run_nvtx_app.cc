// A program annotated only with NVTX (no CUDA): push/pop, a named domain with a registered
// string, and a start/end range that ends on another thread.
//   run_nvtx_app fork-exit   instead: a forked child closes three NVTX "child_frame" ranges and
//                            ends with _exit(0) (no exit handlers run)
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

static volatile double sink;
static void Work(int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += i * 0.5;
  sink = s;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "fork-exit") == 0) {
    nvtxRangePushA("parent_frame");
    nvtxRangePop();
    const pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 3; ++i) {
        nvtxRangePushA("child_frame");
        Work(1000);
        nvtxRangePop();
      }
      _exit(0);
    }
    if (child > 0) waitpid(child, nullptr, 0);
    return 0;
  }
  nvtxDomainHandle_t dom = nvtxDomainCreateA("camera");
  nvtxStringHandle_t decode = nvtxDomainRegisterStringA(dom, "decode");
  nvtxRangeId_t whole = nvtxRangeStartA("whole-run");
  for (int i = 0; i < 2; ++i) {
    nvtxRangePushA("frame");
    nvtxEventAttributes_t a = {};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = decode;
    nvtxDomainRangePushEx(dom, &a);
    Work(100000);
    nvtxDomainRangePop(dom);
    nvtxRangePushA("infer");
    Work(200000);
    nvtxRangePop();
    nvtxRangePop();
  }
  std::thread t([&] {
    Work(1000);
    nvtxRangeEnd(whole);
  });
  t.join();
  std::printf("nvtx_app done\n");
  return 0;
}
