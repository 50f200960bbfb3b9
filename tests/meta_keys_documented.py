#!/usr/bin/python3
"""Meta::extra holds only free-form keys that no other layer reads, each documented.

Checks, over every non-test source under src/:
  1. no code reads meta.extra (find/at/count/contains, or extra["key"] as a value): what a
     reader needs is a typed field of Meta (profile/meta.h), not a string key;
  2. every key written as a literal (extra["key"] = ...) or as a literal prefix
     (extra["thread." + ...]) is listed in docs/profile-format.md's "`meta.extra` keys" table.
Usage: meta_keys_documented.py SOURCE_DIR
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
doc = (root / "docs" / "profile-format.md").read_text()
start = doc.find("### `meta.extra` keys")
if start < 0:
    sys.exit("docs/profile-format.md has no \"### `meta.extra` keys\" section")
end = doc.find("\n## ", start)
section = doc[start:end if end > 0 else len(doc)]
documented = set()
for cell in re.findall(r"^\| (`[^|]+)\|", section, re.M):  # first cell: `a`, `b`
    documented |= set(re.findall(r"`([^`]+)`", cell))

write = re.compile(r'extra\[\s*"([^"]*)"\s*(\+)?[^\]]*\]\s*(\+?=)(?!=)')
read = re.compile(r'extra(\.|->)(find|at|count|contains)\(|extra\[[^\]]*\](?!\s*\+?=[^=])')
problems = []
keys = set()
for path in sorted((root / "src").rglob("*")):
    if path.suffix not in (".cc", ".h") or path.name.endswith(("_test.cc", "_fuzz.cc")):
        continue
    if "testing" in path.parts:
        continue
    rel = path.relative_to(root)
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if "meta" not in line and "extra" not in line:
            continue
        if not re.search(r"meta(\.|->)extra|m\.extra|x\.count|extra\[", line):
            continue
        # profile/meta.cc converts the legacy keys: the one place allowed to read them.
        if rel.as_posix() == "src/profile/meta.cc":
            continue
        if not re.search(r"(meta|m)(\.|->)extra", line):
            continue
        for m in write.finditer(line):
            keys.add(m.group(1) + ("*" if m.group(2) else ""))
        stripped = write.sub("", line)
        if read.search(stripped):
            problems.append(f"{rel}:{n}: reads meta.extra: {line.strip()}")

# Written through a variable: engine::Session::LoadChecks()'s keys (collect/model_profiler.cc).
keys |= {"onnx_checker", "onnx_shape_inference"}
for k in sorted(keys):
    if k not in documented:
        problems.append(f"meta.extra key `{k}` is written but not documented in "
                        "docs/profile-format.md (### `meta.extra` keys)")
for k in sorted(documented - keys):
    problems.append(f"docs/profile-format.md documents meta.extra key `{k}` that nothing writes")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{len(keys)} meta.extra keys, all documented; no reader outside their writer")
