/* A C program annotated with opscope's header: checks that the header is valid C, that ranges
 * nest, that an unmatched pop is ignored and that a range left open ends at exit. Runs fine
 * without opscope (the calls then do nothing). */
#include <opscope/annotate.h>
#include <stdio.h>

static volatile double sink;

static void Work(int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += i * 0.5;
  sink = s;
}

int main(void) {
  for (int frame = 0; frame < 3; ++frame) {
    opscope_range_push("outer");
    Work(200000);
    opscope_range_push("inner");
    Work(100000);
    opscope_range_pop();
    opscope_range_pop();
  }
  opscope_range_pop(); /* unmatched: ignored */
  opscope_range_push("left-open");
  Work(1000);
  printf("annotate_c_app done\n");
  return 0;
}
