/* opscope annotation API: mark the stages of your program (pre-processing, inference,
 * post-processing, ...) so that `opscope run -- ./your_program` reports time per stage.
 *
 *   C:    opscope_range_push("pre-processing"); ...; opscope_range_pop();
 *   C++:  { OPSCOPE_RANGE("pre-processing"); ... }   // RAII, pops at the end of the scope
 *
 * Header only; nothing to link (on glibc older than 2.34 link with -ldl). Ranges nest per
 * thread. When the program does not run under `opscope run` the calls cost one relaxed atomic
 * load and a predictable branch: the first call looks up the recorder with
 * dlsym(RTLD_DEFAULT, "opscope_annotate_api_v1"), which only exists when `opscope run` preloads
 * its runtime library (libopscope_ranges_rt.so) into the program; the answer is cached in the
 * translation unit. Define OPSCOPE_ANNOTATE_DISABLE to compile every call away.
 *
 * Names are copied when recorded: a temporary string is fine. Push and pop must balance on each
 * thread; an unmatched pop is ignored, a range still open at exit ends at exit.
 */
#ifndef OPSCOPE_ANNOTATE_H_
#define OPSCOPE_ANNOTATE_H_

#ifndef OPSCOPE_ANNOTATE_DISABLE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The table exported by the runtime library. Versioned by the symbol name. */
struct opscope_annotate_api_v1 {
  unsigned int struct_size;
  void (*push)(const char* name);
  void (*pop)(void);
};

#ifdef OPSCOPE_ANNOTATE_DISABLE
static inline void opscope_range_push(const char* name) { (void)name; }
static inline void opscope_range_pop(void) {}
#else
/* (void*)1 marks "looked up, not present". */
static inline const struct opscope_annotate_api_v1* opscope_annotate_api_(void) {
  static const struct opscope_annotate_api_v1* cached;
  const struct opscope_annotate_api_v1* api = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (__builtin_expect(api == 0, 0)) {
    api = (const struct opscope_annotate_api_v1*)dlsym(RTLD_DEFAULT, "opscope_annotate_api_v1");
    if (api == 0) api = (const struct opscope_annotate_api_v1*)1;
    __atomic_store_n(&cached, api, __ATOMIC_RELEASE);
  }
  return api == (const struct opscope_annotate_api_v1*)1 ? 0 : api;
}
static inline void opscope_range_push(const char* name) {
  const struct opscope_annotate_api_v1* api = opscope_annotate_api_();
  if (api) api->push(name);
}
static inline void opscope_range_pop(void) {
  const struct opscope_annotate_api_v1* api = opscope_annotate_api_();
  if (api) api->pop();
}
#endif

#ifdef __cplusplus
} /* extern "C" */

namespace opscope {
/* Pushes on construction, pops on destruction. */
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) { opscope_range_push(name); }
  ~ScopedRange() { opscope_range_pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};
}  // namespace opscope

#define OPSCOPE_RANGE_CAT2_(a, b) a##b
#define OPSCOPE_RANGE_CAT_(a, b) OPSCOPE_RANGE_CAT2_(a, b)
#define OPSCOPE_RANGE(name) \
  ::opscope::ScopedRange OPSCOPE_RANGE_CAT_(opscope_range_, __LINE__)(name)
#endif /* __cplusplus */

#endif /* OPSCOPE_ANNOTATE_H_ */
