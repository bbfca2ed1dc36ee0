#!/usr/bin/env bash
# One phase of `make test`, timed: tools/phase.sh NAME TIMES_DIR COMMAND [ARGS...]
# runs the command, writes "NAME  <wall m:ss>  <CPU m:ss>  passed|FAILED (exit N)  <from> <to>"
# to TIMES_DIR/NAME and exits with the command's status; `make test` prints every phase's
# line at its end. CPU time is the command's and its children's, user and system; from and
# to count from TEST_START (seconds since the epoch; `make test` sets it), else the phase's start.
set -u
name=$1 dir=$2
shift 2
mkdir -p "$dir"
start=$(date +%s)
"$@"
rc=$?
secs=$(( $(date +%s) - start ))
# `times`' second line: the children's user and system time, e.g. "1m2.345s 0m3.210s"
times > "$dir/.times-$name"   # in this shell: a pipe would run `times` in a subshell
cpu=$(tail -1 "$dir/.times-$name" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%d", n }')
rm -f "$dir/.times-$name"
if [ "$rc" = 0 ]; then result=passed; else result="FAILED (exit $rc)"; fi
from=$(( start - ${TEST_START:-$start} )) to=$(( start + secs - ${TEST_START:-$start} ))
printf '%-22s %3d:%02d wall %3d:%02d CPU  %-6s  from %2d:%02d to %2d:%02d\n' "$name" \
  $((secs / 60)) $((secs % 60)) $((cpu / 60)) $((cpu % 60)) "$result" \
  $((from / 60)) $((from % 60)) $((to / 60)) $((to % 60)) > "$dir/$name"
exit "$rc"
