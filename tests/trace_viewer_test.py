#!/usr/bin/env python3
"""Loads opscope's Chrome traces in a real viewer: speedscope (the npm package, pinned in
tests/viewers/package.json) in headless Chromium, served from 127.0.0.1.

speedscope reads a trace's complete slices as begin/end pairs at ts and ts + dur (in doubles) and
warns on the console for every slice that ends while another is on top of its stack ("Tried to
end ...": the staircase it then draws) or stays open. The traces: the demo model's op profile
(fused steps, 5 runs), a `run` of the annotated C app (nested ranges) and an imported nvprof GPU
trace. Each must import as a Trace Event Format profile with no such warning.

Perfetto's trace processor is not used: neither Debian 12 nor the npm registry has it (its Python
package downloads a prebuilt binary at run time); src/report/trace_check.h checks the integer-ns
reading Perfetto does.

Installs speedscope into tests/viewers/node_modules when it is missing. Skips (exit 77, with the
reason) without chromium or npm, or when the install fails. Never asserts a time.
usage: trace_viewer_test.py BUILD_DIR SOURCE_DIR
"""
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

SKIP = 77


def main():
    build, src = sys.argv[1], sys.argv[2]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    viewers = os.path.join(src, "tests", "viewers")
    release = os.path.join(viewers, "node_modules", "speedscope", "dist", "release")
    if not os.path.isfile(os.path.join(release, "index.html")):
        if not shutil.which("npm"):
            print("SKIP: npm is not installed, and speedscope is not in tests/viewers/node_modules")
            return SKIP
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=viewers,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0 or not os.path.isfile(os.path.join(release, "index.html")):
            print("SKIP: `npm install` of speedscope in tests/viewers failed:\n" + r.stderr[-2000:])
            return SKIP

    opscope = os.path.join(build, "opscope")
    tmp = tempfile.mkdtemp(prefix="opscope-viewer-")
    site = os.path.join(tmp, "site")
    shutil.copytree(release, site)
    traces = {  # name -> the command that writes it, given the output path
        "demo": lambda out: [opscope, "profile", os.path.join(src, "models", "bev_demo.onnx"),
                             "--warmup", "1", "--runs", "5", "--no-overhead", "-o", out],
        "ranges": lambda out: [opscope, "run", "-o", out, "--",
                               os.path.join(build, "tests", "bin", "run_annotate_c_app")],
        "nvprof": lambda out: [opscope, "report", os.path.join(src, "src", "importers", "testdata",
                                                                "nvprof_trace.csv"), "-o", out],
    }
    for name, command in traces.items():
        out = os.path.join(site, name + ".trace.json")
        cmd = command(out)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0 or not os.path.isfile(out):
            print(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
            return 1

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    failed = 0
    for name in traces:
        url = f"{base}index.html#profileURL={base}{name}.trace.json"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-dev-shm-usage",
               f"--user-data-dir={os.path.join(tmp, 'chrome-' + name)}", "--enable-logging=stderr",
               "--v=0", "--virtual-time-budget=20000", "--dump-dom", url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
        imported = any("Importing as Trace Event Format profile" in l for l in console)
        bad = [l for l in console if re.search(r"Tried to end|still open|Unexpected|Empty profile", l)]
        title = re.search(r"<title>([^<]*)</title>", r.stdout)
        ok = imported and not bad and title and title.group(1) == f"{name}.trace.json - speedscope"
        print(f"{'ok  ' if ok else 'FAIL'} {name}: imported={imported}, warnings={len(bad)}, "
              f"title={title.group(1) if title else None!r}")
        for l in bad[:5]:
            print("    " + l[:300])
        failed += not ok
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(traces) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
