// libopscope_ranges_rt.so: the runtime behind include/opscope/annotate.h. `opscope run` puts it
// in LD_PRELOAD; annotate.h finds `opscope_annotate_api_v1` with dlsym and calls through it.
#include "collect/ranges_recorder.h"
#include "opscope/annotate.h"

namespace {

uint32_t g_domain = 0;

void RtPush(const char* name) { opscope::collect::rec::Push(g_domain, name); }
void RtPop() { opscope::collect::rec::Pop(g_domain); }

__attribute__((constructor)) void RtInit() {
  if (opscope::collect::rec::Init("annotate"))
    g_domain = opscope::collect::rec::InternDomain("opscope");
}

}  // namespace

extern "C" __attribute__((visibility("default")))
const struct opscope_annotate_api_v1 opscope_annotate_api_v1 = {
    sizeof(struct opscope_annotate_api_v1), RtPush, RtPop};
