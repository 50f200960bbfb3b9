// Built twice by tests/CMakeLists.txt, at -O0 -g and at -O2 -g, so `opscope run` can tell a
// debug build from a release build by the DWARF producer strings.
#include <opscope/annotate.h>

#include <cstdio>

int main() {
  OPSCOPE_RANGE("main");
  volatile double s = 0;
  for (int i = 0; i < 1000; ++i) s = s + i;
  std::printf("%g\n", static_cast<double>(s));
  return 0;
}
