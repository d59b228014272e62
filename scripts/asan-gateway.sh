#!/usr/bin/env bash
# Run the gateway's loopback tests against an AddressSanitizer + UBSan build of the C tunnel engine
# (src/proxyplane/gateway/csrc/). The normal build is put back afterwards, also on failure.
#   scripts/asan-gateway.sh                 # tests/gateway, uvloop runs (the engine path)
#   scripts/asan-gateway.sh tests/gateway/test_tunnels.py
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
so=$(ls src/proxyplane/gateway/_tunnels*.so)
tmp=$(mktemp -d)
trap 'rm -f "$so"; cp "$tmp/normal.so" "$so"; rm -rf "$tmp"' EXIT
inc=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
gcc -shared -fPIC -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -I"$inc" \
  src/proxyplane/gateway/csrc/*.c -o "$tmp/asan.so"
cp "$so" "$tmp/normal.so"
rm -f "$so" && cp "$tmp/asan.so" "$so"  # a new inode: processes that mapped the old file keep it
# -s: a sanitizer report is printed when the process aborts, not swallowed by pytest's capture
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  $PY -m pytest -s -p no:faulthandler -q -x -k uvloop "${@:-tests/gateway}"
