#!/usr/bin/env bash
# Coverage-guided fuzzing of the C tunnel engine's handshake framing (libFuzzer + ASan + UBSan, Debian's
# clang), on the seed corpus in tests/fuzz/corpus/handshake. See docs/decisions/fuzzing.md.
#   scripts/fuzz.sh            # 20 s
#   scripts/fuzz.sh 600        # longer by hand; extra arguments go to libFuzzer, e.g. -jobs=2
# New inputs found go to a scratch corpus (FUZZ_WORK, default a temp dir), never into the repo; a crash
# leaves crash-* there and the script exits non-zero. Installs clang when missing and root; exit 3: no clang.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
if ! command -v clang >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    if ! (apt-get install -y -qq clang || (apt-get update -qq && apt-get install -y -qq clang)) >/dev/null; then
      echo "fuzz.sh: apt-get could not install clang" >&2
      exit 3
    fi
  else
    echo "fuzz.sh: clang missing (install Debian's clang, or run as root)" >&2
    exit 3
  fi
fi
PY=${PYTHON:-.venv/bin/python}
inc=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
libdir=$($PY -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))")
ver=$($PY -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
work="${FUZZ_WORK:-$(mktemp -d)}"
mkdir -p "$work/corpus"
srcs=(tests/fuzz/fuzz_handshake.c src/proxyplane/gateway/csrc/{actions,conn,handshake,relay,module,fast,fast_api,splice}.c)
# the build is cached by the sources' hash (about 5 s of CPU otherwise)
hash=$(cat "${srcs[@]}" src/proxyplane/gateway/csrc/tunnels.h scripts/fuzz.sh | sha256sum | cut -c1-16)
build="${FUZZ_BUILD:-${TMPDIR:-/tmp}/proxyplane-fuzz-$hash}"
bin="$build/fuzz_handshake"
if [ ! -x "$bin" ]; then
  mkdir -p "$build"
  clang -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$inc" "${srcs[@]}" -L"$libdir" -Wl,-rpath,"$libdir" -lpython"$ver" -o "$bin.tmp"
  mv "$bin.tmp" "$bin"
fi
# Python's interpreter is never finalized: what it holds at exit is not a leak of ours (the engine's own
# buffers and connections are plain malloc, outside libpython, so they are still checked).
echo "leak:libpython" >"$build/lsan.supp"
echo "fuzz.sh: $bin; fuzzing ${seconds}s (new inputs in $work/corpus)"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 LSAN_OPTIONS=suppressions="$build/lsan.supp" \
  UBSAN_OPTIONS=print_stacktrace=1 \
  "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/" "$@" "$work/corpus" tests/fuzz/corpus/handshake
