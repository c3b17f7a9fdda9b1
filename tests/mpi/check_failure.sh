#!/bin/sh
# Runs test_mpi_failure MODE under mpirun and checks that the job ends (within the limit) with a
# non-zero status, and for `stall` that process 0 reported the timeout.
#   check_failure.sh MPIRUN EXE MODE
set -u
mpirun=$1 exe=$2 mode=$3
log=$(mktemp)
start=$(date +%s)
timeout 60 "$mpirun" -np 2 --oversubscribe "$exe" "$mode" >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$log"
echo "-- mpirun exit status $rc after ${elapsed} s"
fail=0
if [ "$rc" = 0 ]; then echo "FAIL: the job succeeded"; fail=1; fi
if [ "$rc" = 124 ]; then echo "FAIL: the job hung (killed by timeout 60)"; fail=1; fi
if [ "$elapsed" -gt 40 ]; then echo "FAIL: took ${elapsed} s"; fail=1; fi
if [ "$mode" = stall ] && ! grep -q "caught kax::collective_timeout: kax::psum<\"i\"> of float32(4,): timed out after 1 s" "$log"; then
  echo "FAIL: process 0 did not report the timeout"; fail=1
fi
rm -f "$log"
exit $fail
