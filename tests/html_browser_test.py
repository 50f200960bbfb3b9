#!/usr/bin/env python3
"""Loads every kind of opscope HTML report in headless Chromium and checks what a reader sees.

Pages: the demo model profile (through `opscope profile -o FILE.html`), a model profile with
call-stack samples, a `record` of a real program, a `run` profile of the pipeline example, a diff
(`opscope diff A B -o diff.html`) and a `stat` profile (the counter table). For each page, the
page's own self-test hook (`#selftest`, src/report/html/page.js) reports JavaScript errors, table row counts, whether
sorting a numeric column orders the rows, and the size of every chart; this driver adds the
browser's console output (any console message or Content-Security-Policy violation fails) and
the op count from the profile JSON. The demo page is also loaded without its script (what a reader
with JavaScript disabled gets): its table must still hold every op, and the findings and charts
must be there.

Skips (exit 77, with the reason) when chromium is not installed. Never asserts a time.
usage: html_browser_test.py BUILD_DIR SOURCE_DIR
"""
import concurrent.futures
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

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


def check_page(browser, tmp, name, page, expect_rows, charts, table):
    dom, err = chromium(browser, page, "#selftest", os.path.join(tmp, "chrome-" + name))
    problems = []
    for l in console_lines(err):
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
    build, src = sys.argv[1], sys.argv[2]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs it: apt-get install chromium)")
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
        ]
        problems = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            futs = {ex.submit(check_page, browser, tmp, *pg): pg[0] for pg in pages}
            # Without JavaScript: the page with its script removed (headless --dump-dom cannot run
            # with scripting disabled in the browser).
            page = open(P("demo.html")).read()
            start, end = page.index("<script>"), page.index("</script>") + len("</script>")
            open(P("demo-nojs.html"), "w").write(page[:start] + page[end:])
            nojs = ex.submit(chromium, browser, P("demo-nojs.html"), "", P("chrome-nojs"))
            for f in concurrent.futures.as_completed(futs):
                problems += [f"{futs[f]}: {p}" for p in f.result()]
            dom, err = nojs.result()
            rows = len(re.findall(r'<tr [^>]*data-op="', dom))
            if rows != n_ops:
                problems.append(f"demo without JavaScript: {rows} op rows, expected {n_ops}")
            if 'class="nojs"' not in dom:
                problems.append("demo without JavaScript: the page's script ran anyway")
            if "id=\"findings\"" not in dom or "<svg class=\"chart roofline\"" not in dom:
                problems.append("demo without JavaScript: findings or charts missing")
            print(f"demo without JavaScript: {rows} op rows", flush=True)
        if problems:
            print("FAIL:\n  " + "\n  ".join(problems))
            return 1
        print("PASS")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
