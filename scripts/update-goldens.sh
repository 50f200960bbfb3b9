#!/bin/sh
# Regenerates the golden files of every output format (src/*/testdata/<input>.<options>.<format>)
# from the current code, then shows what changed. Review the diff before committing it.
#   scripts/update-goldens.sh [BUILD_DIR]   (default build/release)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build/release}
tests="report_test samples_report_test stat_table_test analysis_test memory_section_test"
[ -f "$build/src/gpu/gpu_test" ] || grep -q gpu_test "$build/build.ninja" 2>/dev/null && tests="$tests gpu_test"
cmake --build "$build" -j2 --target $tests
for t in $tests; do
  bin=$(find "$build/src" -name "$t" -type f -perm -u+x | head -n 1)
  echo "== $t"
  OPSCOPE_UPDATE_GOLDEN=1 "$bin" --gtest_brief=1 >/dev/null || true
done
git status --short -- 'src/*/testdata'
git diff --stat -- 'src/*/testdata'
