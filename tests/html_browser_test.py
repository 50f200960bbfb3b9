#!/usr/bin/env python3
"""Loads every kind of opscope HTML report in headless Chromium and checks what a reader sees.

Pages: the demo model profile (through `opscope profile -o FILE.html`), a model profile with
call-stack samples, a `record` of a real program, a `run` profile of the pipeline example, a diff
(`opscope diff A B -o diff.html`), a `stat` profile (the counter table), and a 600-op profile
(bench/html_big_profile) and the diff of two such profiles, whose tables hold only their first 200
rows as HTML and build the rest from a JSON block: a row that is not in the page must be found by the filter and by a finding's
link, a built row must have the cells of a server-rendered one, and sorting must order every row. For each page, the
page's own self-test hook (`#selftest`, src/report/html/page.js) reports JavaScript errors, table row counts, whether
sorting a numeric column orders the rows, and the size of every chart; this driver adds the
browser's console output (any console message or Content-Security-Policy violation fails) and
the op count from the profile JSON. The demo page is also loaded without its script (what a reader
with JavaScript disabled gets): its table must still hold every op, and the findings and charts
must be there.

`--browser firefox` runs the same pages and checks in headless Firefox (firefox-esr), driven through
its built-in Marionette protocol (tests/marionette.py). Firefox does not show its Content-Security-
Policy reports to a headless driver, so only Chromium's run checks that no CSP violation is logged.

Skips (exit 77, with the reason) when the browser is not installed. Never asserts a time.
usage: html_browser_test.py BUILD_DIR SOURCE_DIR [--browser chromium|firefox]
"""
import argparse
import concurrent.futures
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

SKIP = 77


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def chromium(browser, page, fragment, profile_dir, extra=()):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}", "--enable-logging=stderr", "--v=0",
           "--window-size=1400,1000", *extra, "--dump-dom", "file://" + page + fragment]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return r.stdout, r.stderr


def console_lines(stderr):
    return [l for l in stderr.splitlines() if ":CONSOLE" in l or "Content Security Policy" in l]


class ChromiumLoader:
    """Headless Chromium, one process per page (`--dump-dom`); two pages at a time."""
    name, workers = "chromium", 2

    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, tmp

    def load(self, page, fragment, tag):
        dom, err = chromium(self.binary, page, fragment, os.path.join(self.tmp, "chrome-" + tag))
        return dom, console_lines(err), err

    def close(self):
        pass


class FirefoxLoader:
    """Headless Firefox driven through Marionette (tests/marionette.py): one browser, one page at
    a time. Messages of the page (console, uncaught errors) print to its output with
    devtools.console.stdout.content; the browser's own chrome messages (resource://) are not the
    page's and are ignored."""
    name, workers = "firefox", 1

    def __init__(self, binary, tmp):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import marionette
        self.ff = marionette.Firefox(binary)
        self.lock = threading.Lock()

    def load(self, page, fragment, tag):
        with self.lock:
            before = len(self.ff.console())
            dom = self.ff.dom("file://" + page + fragment)
            out = self.ff.console()[before:]
        lines = [l for l in out.splitlines() if "file://" in l or "Content-Security-Policy" in l
                 or "Content Security Policy" in l]
        return dom, lines, out

    def close(self):
        self.ff.close()


def check_page(loader, name, page, expect_rows, charts, table, lazy=None):
    dom, console, err = loader.load(page, "#selftest", name)
    problems = []
    for l in console:
        problems.append("console: " + l.strip())
    found = re.findall(r'<pre id="opscope-selftest">(.*?)</pre>', dom, re.S)
    m = re.match(r"(.*)", found[-1], re.S) if found else None
    if not m:
        return problems + [f"no self-test result in the DOM (script did not run?); stderr tail: {err[-600:]}"]
    try:
        res = json.loads(html.unescape(m.group(1)))
    except ValueError as e:
        return problems + [f"self-test result is not JSON ({e}): {m.group(1)[:300]}"]
    if res["errors"]:
        problems.append(f"JavaScript errors: {res['errors']}")
    if res["rows_total"] != expect_rows:
        problems.append(f"{res['rows_total']} op rows, expected {expect_rows}")
    t = res["tables"].get(table)
    if not t:
        problems.append(f"table {table} missing")
    else:
        if t["rows"] != t["declared"]:
            problems.append(f"table {table}: {t['rows']} rows, page declares {t['declared']}")
        if not t.get("sorted"):
            problems.append(f"table {table}: sorting by '{t.get('sort_column')}' did not order the rows")
        if t.get("rows_after_sort") != t["rows"]:
            problems.append(f"table {table}: sorting lost rows")
        if "filter_ok" in t and not t["filter_ok"]:
            problems.append(f"table {table}: filtering by op type left non-matching rows (or none)")
        if "rows_after_filter" in t and t["rows_after_filter"] != t["rows"]:
            problems.append(f"table {table}: clearing the filter did not bring every row back")
        if "filter_count_ok" in t and not t["filter_count_ok"]:
            problems.append(f"table {table}: the filter's count '{t.get('filter_count')}' is not over every row")
        if lazy:
            # Only the first rows are in the page; the rest are built from the JSON block.
            if not t.get("lazy"):
                problems.append(f"table {table}: expected only the first rows as HTML, the page has all {t['rows']}")
            elif t["dom_rows"] >= t["declared"]:
                problems.append(f"table {table}: {t['dom_rows']} rows in the page at load, not fewer than {t['declared']}")
            else:
                if not t.get("lazy_target_absent"):
                    problems.append(f"table {table}: the last row {t.get('lazy_target')} was in the page at load")
                if not t.get("lazy_filter_found"):
                    problems.append(f"table {table}: filtering for {t.get('lazy_target')} (not in the page) did not show it alone")
                if not t.get("lazy_cells_match"):
                    problems.append(f"table {table}: a row built from the JSON differs from the HTML rows in its cells")
                if t.get("dom_rows_after_clear") != t["dom_rows"]:
                    problems.append(f"table {table}: clearing the filter left {t.get('dom_rows_after_clear')} rows, not the first {t['dom_rows']}")
                if lazy.get("link") and (t.get("link_target") != lazy["link"] or not t.get("link_ok")):
                    steps = {k: t.get(k) for k in ("link_built", "link_hit", "link_visible", "link_in_view")}
                    problems.append(f"table {table}: following the finding's link to {lazy['link']} (not in the page) "
                                    f"did not build, highlight and scroll to it (target {t.get('link_target')}, {steps})")
        if lazy and lazy.get("link"):
            # Opening the page at a row that is not in it (a link from elsewhere): built and marked.
            dom, _, _ = loader.load(page, "#" + lazy["link"], name + "-at-link")
            tag = re.search(r'<tr [^>]*id="' + re.escape(lazy["link"]) + r'"[^>]*>', dom)
            if not tag or not re.search(r'class="[^"]*\bhit\b', tag.group(0)):
                problems.append(f"opening the page at #{lazy['link']} did not build and mark that row: "
                                f"{tag.group(0) if tag else 'no such row'}")
    for c in charts:
        box = res["charts"].get(c)
        if not box:
            problems.append(f"chart {c} missing")
        elif box["width"] <= 0 or box["height"] <= 0 or box["marks"] <= 0:
            problems.append(f"chart {c} did not draw: {box}")
    print(f"{name}: {res['rows_total']} rows, tables {sorted(res['tables'])}, charts {sorted(res['charts'])}",
          flush=True)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("src")
    ap.add_argument("--browser", choices=["chromium", "firefox"], default="chromium")
    a = ap.parse_args()
    build, src = a.build, a.src
    if a.browser == "chromium":
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if not browser:
            print("SKIP: chromium is not installed (scripts/install-deps.sh installs it: apt-get install chromium)")
            return SKIP
    else:
        browser = shutil.which("firefox-esr") or shutil.which("firefox")
        if not browser:
            print("SKIP: firefox-esr is not on PATH (optional and large, not in scripts/install-deps.sh: "
                  "apt-get install --no-install-recommends firefox-esr)")
            return SKIP
    opscope = os.path.join(build, "opscope")
    render = os.path.join(build, "html_render")
    model = os.path.join(src, "models", "bev_demo.onnx")
    tmp = tempfile.mkdtemp(prefix="opscope-html-")
    try:
        P = lambda n: os.path.join(tmp, n)
        prof = [opscope, "profile", model, "--threads", "2", "--warmup", "1", "--runs", "5"]
        run(prof + ["-o", P("demo.html")])
        run(prof + ["--sample", "-o", P("a.json")])  # also the "before" of the diff
        run(prof + ["--no-fuse", "--no-overhead", "-o", P("b.json")])
        run([render, P("a.json"), P("sampled.html")])
        run([opscope, "record", "-q", "-o", P("split.rec"), "--", os.path.join(build, "tests", "record_split_fp"), "200"])
        run([render, P("split.rec"), P("record.html")])
        run([opscope, "run", "-r", "2", "-o", P("run.json"), "--", os.path.join(build, "examples", "pipeline_example"), "1"])
        run([render, P("run.json"), P("run.html")])
        run([opscope, "diff", P("a.json"), P("b.json"), "-o", P("diff.html")])
        run([opscope, "stat", "-r", "2", "-o", P("stat.json"), "--", "true"])
        run([render, P("stat.json"), P("stat.html")])
        # More ops than the page holds as HTML (200 rows): the rest are built by the script. A
        # finding names a low-share op, so its link targets a row that is not in the page.
        run([os.path.join(build, "bench", "html_big_profile"), P("big.json"), "600", "10"])
        big = json.load(open(P("big.json")))
        by_share = sorted(range(len(big["ops"])), key=lambda i: big["ops"][i]["share"])
        link_op = by_share[1]
        big["findings"].append({"rule": "test-link", "severity": "info", "title": "names a row beyond the first",
                                "evidence": "", "suggestion": "", "ops": [big["ops"][link_op]["name"]]})
        json.dump(big, open(P("big.json"), "w"))
        run([render, P("big.json"), P("big.html")])
        run([os.path.join(build, "bench", "html_big_profile"), P("big_b.json"), "600", "12"])
        run([opscope, "diff", P("big.json"), P("big_b.json"), "-o", P("bigdiff.html")])
        n_ops = len(json.load(open(P("a.json")))["ops"])
        a_names = {o["name"] for o in json.load(open(P("a.json")))["ops"]}
        b_names = {o["name"] for o in json.load(open(P("b.json")))["ops"]}
        op_charts = ["latency-chart", "optype-chart", "stage-chart", "roofline-chart", "flame-chart", "timeline-chart"]
        pages = [
            ("demo", P("demo.html"), n_ops, op_charts, "optable"),
            ("sampled", P("sampled.html"), n_ops, op_charts, "optable"),
            ("record", P("record.html"), 0, ["flame-chart"], "functable"),
            ("run", P("run.html"), 0, ["timeline-chart"], "rangetable"),
            ("diff", P("diff.html"), len(a_names | b_names), ["optype-delta-chart"], "difftable"),
            ("stat", P("stat.html"), 0, ["latency-chart"], "countertable"),
            ("big", P("big.html"), len(big["ops"]), op_charts, "optable", {"link": f"op-{link_op}"}),
            ("bigdiff", P("bigdiff.html"), len(big["ops"]), ["optype-delta-chart"], "difftable", {"link": None}),
        ]
        problems = []
        try:
            loader = (ChromiumLoader if a.browser == "chromium" else FirefoxLoader)(browser, tmp)
        except RuntimeError as e:
            print(f"FAIL: {a.browser} did not start: {e}")
            return 1
        print(f"browser: {a.browser} ({browser})", flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=loader.workers) as ex:
            futs = {ex.submit(check_page, loader, *pg): pg[0] for pg in pages}
            # Without JavaScript: the page with its script removed (headless --dump-dom cannot run
            # with scripting disabled in the browser).
            page = open(P("demo.html")).read()
            start, end = page.index("<script>"), page.index("</script>") + len("</script>")
            open(P("demo-nojs.html"), "w").write(page[:start] + page[end:])
            nojs = ex.submit(loader.load, P("demo-nojs.html"), "", "nojs")
            for f in concurrent.futures.as_completed(futs):
                problems += [f"{futs[f]}: {p}" for p in f.result()]
            dom, _, _ = nojs.result()
            rows = len(re.findall(r'<tr [^>]*data-op="', dom))
            if rows != n_ops:
                problems.append(f"demo without JavaScript: {rows} op rows, expected {n_ops}")
            if 'class="nojs"' not in dom:
                problems.append("demo without JavaScript: the page's script ran anyway")
            if "id=\"findings\"" not in dom or "<svg class=\"chart roofline\"" not in dom:
                problems.append("demo without JavaScript: findings or charts missing")
            print(f"demo without JavaScript: {rows} op rows", flush=True)
            # The large page without JavaScript: its first rows, and a note that says so and how
            # to get the whole table.
            page = open(P("big.html")).read()
            start = page.index("<script>")
            end = page.index("</script>", start) + len("</script>")
            open(P("big-nojs.html"), "w").write(page[:start] + page[end:])
            dom, _, _ = loader.load(P("big-nojs.html"), "", "big-nojs")
            rows = len(re.findall(r'<tr [^>]*id="(?:op|step)-', dom))
            note = re.search(r'<noscript><p class="note" id="optable-noscript">Only the first (\d+) of the (\d+) rows.*?'
                             r'opscope report PROFILE.json --format csv', page, re.S)
            declared = re.search(r'<table id="optable"[^>]* data-rows="(\d+)"', page)
            if not note or not declared:
                problems.append("big page without JavaScript: no <noscript> note on the missing rows")
            elif int(note.group(1)) != rows or int(note.group(2)) != int(declared.group(1)) or rows >= int(declared.group(1)):
                problems.append(f"big page without JavaScript: {rows} rows, the note says {note.group(1)} of "
                                f"{note.group(2)}, the table declares {declared.group(1)}")
            print(f"big page without JavaScript: {rows} of {declared.group(1) if declared else '?'} rows", flush=True)
        loader.close()
        if problems:
            print("FAIL:\n  " + "\n  ".join(problems))
            return 1
        print("PASS")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
