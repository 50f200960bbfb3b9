#!/usr/bin/env bash
# Load time of the HTML report of a 5000-op profile in headless Chromium.
#
# usage: bench/html_load.sh [BUILD_DIR]   env: OPS (5000) RUNS (20) REPEATS (5)
# Generates a synthetic transformer-shaped profile (bench/html_big_profile.cc), renders it with
# the html format, and opens it REPEATS times. "ready" is the page's own performance.now() at the
# end of its script, after a forced layout of the whole page (navigation start → parsed DOM,
# styles, layout, sort/filter/zoom handlers installed): when a reader can use it. "process" is
# the wall time of the whole `chromium --dump-dom` run minus that of a blank page, as a check
# that nothing after the script (paint, the DOM dump) hides a cost.
set -euo pipefail
BUILD=${1:-build/release}
OPS=${OPS:-5000}
RUNS=${RUNS:-20}
REPEATS=${REPEATS:-5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CHROME=$(command -v chromium || true)
[[ -n "$CHROME" ]] || { echo "html_load: chromium is not installed" >&2; exit 1; }

"$BUILD/html_big_profile" "$TMP/big.json" "$OPS" "$RUNS"
t0=$(date +%s.%N); "$BUILD/html_render" "$TMP/big.json" "$TMP/big.html"; t1=$(date +%s.%N)
echo '<!DOCTYPE html><html><body>blank</body></html>' > "$TMP/blank.html"

open_page() {  # URL -> "ready_ms wall_s"
  local start end out
  start=$(date +%s.%N)
  out=$("$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
        --disable-dev-shm-usage --user-data-dir="$TMP/prof" --window-size=1400,1000 --dump-dom "$1" 2>/dev/null)
  end=$(date +%s.%N)
  local ready
  ready=$(printf '%s' "$out" | /usr/bin/python3 -c '
import html, json, re, sys
m = re.search(r"<pre id=\"opscope-selftest\">(.*?)</pre>", sys.stdin.read(), re.S)
print(json.loads(html.unescape(m.group(1)))["ready_ms"] if m else "nan")')
  /usr/bin/python3 -c "print(f'$ready {$end - $start:.3f}')"
}

open_page "file://$TMP/blank.html" >/dev/null  # warm the browser's files
readies=(); walls=(); blanks=()
for ((i = 0; i < REPEATS; i++)); do
  read -r r w < <(open_page "file://$TMP/big.html#timing")
  readies+=("$r"); walls+=("$w")
  read -r _ b < <(open_page "file://$TMP/blank.html")
  blanks+=("$b")
done
/usr/bin/python3 - "$OPS" "$(stat -c %s "$TMP/big.html")" "$(/usr/bin/python3 -c "print(f'{$t1 - $t0:.3f}')")" \
  "${readies[*]}" "${walls[*]}" "${blanks[*]}" <<'PY'
import statistics, sys
ops, size, render = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ready = [float(x) for x in sys.argv[4].split()]
wall = [float(x) for x in sys.argv[5].split()]
blank = [float(x) for x in sys.argv[6].split()]
extra = [w - b for w, b in zip(wall, blank)]
print(f"{ops} ops: page {size / 1e6:.1f} MB, rendered in {render} s")
print(f"ready (page's performance.now() after its script and a forced layout): median "
      f"{statistics.median(ready):.0f} ms, min {min(ready):.0f}, max {max(ready):.0f} ms over {len(ready)} loads")
print(f"process wall time minus a blank page: median {statistics.median(extra):.2f} s")
PY
lscpu | grep 'Model name' || true
