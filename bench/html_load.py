#!/usr/bin/env python3
"""Opening time of the HTML report of a 5000-op profile in headless Chromium.

usage: bench/html_load.py [BUILD_DIR] [--ops 5000] [--runs 20] [--repeats 5] [--compare HTML_RENDER]

--compare renders the same profile with another build's html_render too (e.g. a copy of main's,
for before/after figures) and loads the two pages alternately, in the same run.

Generates a synthetic transformer-shaped profile (bench/html_big_profile.cc), renders it with the
html format, and opens it REPEATS times, each time next to a blank page:
  cpu      CPU time (user + sys, every Chromium process) of `chromium --screenshot` on the report
           minus the same for a blank page: parsing, style, layout of the whole op table, script,
           and painting the first screen. On an idle machine the page opens in about this time
           (the renderer's main thread does almost all of it); it is also the figure that stays
           meaningful on a loaded machine.
  ready    the page's own performance.now() at the end of its script, after a forced layout
           (navigation start -> usable page), from `--dump-dom URL#timing`: wall time, inflated by
           whatever else the machine runs.
  all      the same after forcing the layout of the sections that are deferred until scrolled
           near (content-visibility: auto): the cost of scrolling through every chart at once.
The load average is printed with the figures: on a loaded machine only `cpu` means much.
"""
import argparse
import html
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def chromium(browser, prof, args):
    c0, w0 = children_cpu(), time.monotonic()
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={prof}",
                          "--window-size=1400,1000", *args], capture_output=True, text=True, timeout=300).stdout
    return children_cpu() - c0, time.monotonic() - w0, out


def measure(browser, prof, tmp, page, blank, repeats):
    cpu, ready, full = [], [], []
    for _ in range(repeats):
        c_page, _, _ = chromium(browser, prof, ["--screenshot=" + os.path.join(tmp, "p.png"), "file://" + page])
        c_blank, _, _ = chromium(browser, prof, ["--screenshot=" + os.path.join(tmp, "b.png"), "file://" + blank])
        cpu.append(c_page - c_blank)
        _, _, dom = chromium(browser, prof, ["--dump-dom", "file://" + page + "#timing"])
        m = re.findall(r'<pre id="opscope-selftest">(.*?)</pre>', dom, re.S)
        if m:
            r = json.loads(html.unescape(m[-1]))
            ready.append(r["ready_ms"])
            full.append(r["all_ms"])
    return cpu, ready, full


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build/release")
    ap.add_argument("--ops", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--compare", help="another html_render binary: its page is measured alongside")
    a = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[:3]
    browser = shutil.which("chromium")
    if not browser:
        raise SystemExit("html_load: chromium is not installed")
    tmp = tempfile.mkdtemp()
    try:
        big, blank = os.path.join(tmp, "big.json"), os.path.join(tmp, "blank.html")
        subprocess.run([os.path.join(a.build, "bench", "html_big_profile"), big, str(a.ops), str(a.runs)], check=True)
        renders = [("this build", os.path.join(a.build, "html_render"))]
        if a.compare:
            renders.append(("--compare", a.compare))
        pages = []
        for k, (label, exe) in enumerate(renders):
            page = os.path.join(tmp, f"big{k}.html")
            t0 = time.monotonic()
            subprocess.run([exe, big, page], check=True)
            pages.append((label, page, time.monotonic() - t0))
        open(blank, "w").write("<!DOCTYPE html><html><body>blank</body></html>")
        prof = os.path.join(tmp, "prof")
        chromium(browser, prof, ["--screenshot=" + os.path.join(tmp, "w.png"), "file://" + blank])  # warm up
        results = {label: ([], [], []) for label, _, _ in pages}
        # Alternate the pages, one load of each per round, so both see the same machine.
        for _ in range(a.repeats):
            for label, page, _ in pages:
                for acc, new in zip(results[label], measure(browser, prof, tmp, page, blank, 1)):
                    acc.extend(new)
        med = statistics.median
        print("load average before:", load0, "after:", open("/proc/loadavg").read().split()[:3], "on",
              os.cpu_count(), "CPUs")
        for label, page, render_s in pages:
            cpu, ready, full = results[label]
            print(f"[{label}] {a.ops} ops, {a.runs} runs: page {os.path.getsize(page) / 1e6:.1f} MB, rendered by "
                  f"html_render in {render_s:.2f} s")
            print(f"  cpu   (open + paint first screen, minus a blank page): median {med(cpu):.2f} s "
                  f"(min {min(cpu):.2f}, max {max(cpu):.2f}) over {len(cpu)} loads")
            if ready:
                print(f"  ready (wall, page's performance.now()): median {med(ready) / 1e3:.2f} s "
                      f"(min {min(ready) / 1e3:.2f}, max {max(ready) / 1e3:.2f}); "
                      f"all sections laid out: {med(full) / 1e3:.2f} s")
        cpu_model = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
        print("CPU:", cpu_model[0] if cpu_model else "unknown")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
