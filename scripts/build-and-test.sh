#!/usr/bin/env bash
# Configures (or reconfigures) one build directory, builds it, runs its test suite and ends with
# the line `N passed, N failed` (counted from meson's test log; exit status 1 if anything failed).
# Used by scripts/test.sh and .ci/run; expects scripts/setup.sh to have run.
#
#   scripts/build-and-test.sh BUILD_DIR [meson setup options...] [-- meson test options...]
#   KAX_JOBS=n   parallel compile jobs (default: the number of cores)
#   KAX_BUILD_ONLY=1   build, do not run (a GPU build on a machine without a GPU): the line counts
#                      the test programs built, and the failed build as 1
set -euo pipefail

build=$1; shift
setup_args=() test_args=()
while (($#)); do
  if [ "$1" = "--" ]; then shift; test_args=("$@"); break; fi
  setup_args+=("$1"); shift
done
jobs=${KAX_JOBS:-$(nproc)}
log() { echo "[kax] $*" >&2; }

# --reconfigure on an existing directory applies the options and picks up new headers and tests.
if [ -f "$build/meson-private/coredata.dat" ]; then
  meson setup --reconfigure "$build" "${setup_args[@]}"
else
  rm -rf "$build"
  meson setup "$build" "${setup_args[@]}"
fi

# -k 0: build all that builds, so one broken test file costs its own tests, not the whole run.
build_failed=0
if ! ninja -C "$build" -j"$jobs" -k 0; then
  build_failed=1
  log "the build of $build failed (see above); running the tests that did build"
fi

if [ "${KAX_BUILD_ONLY:-0}" = 1 ]; then
  built=$(find "$build/tests" -type f -executable -name '*_test_*' | wc -l)
  log "built $built test programs (not run: KAX_BUILD_ONLY=1)"
  echo "$built passed, $build_failed failed"
  [ "$build_failed" = 0 ]
  exit
fi

rm -f "$build/meson-logs/testlog.json"
set +e
meson test -C "$build" --no-rebuild --print-errorlogs "${test_args[@]}"
set -e

# Count from meson's machine-readable log: one JSON object per test.
read -r passed failed < <(python3 - "$build/meson-logs/testlog.json" "$build_failed" <<'PY'
import json, sys
ok = bad = 0
try:
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)["result"]
                if r in ("OK", "EXPECTEDFAIL"):
                    ok += 1
                elif r != "SKIP":
                    bad += 1
except FileNotFoundError:
    bad += 1
print(ok, bad + int(sys.argv[2]))
PY
)
((build_failed)) && log "(the failed count includes 1 for the failed build)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
