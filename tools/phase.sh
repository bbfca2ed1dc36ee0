#!/usr/bin/env bash
# One phase of `make test`, timed: tools/phase.sh NAME TIMES_DIR COMMAND [ARGS...]
# runs the command, writes "NAME  <m:ss>  passed|FAILED (exit N)" to TIMES_DIR/NAME and
# exits with the command's status; `make test` prints every phase's line at its end.
set -u
name=$1 dir=$2
shift 2
mkdir -p "$dir"
start=$(date +%s)
"$@"
rc=$?
secs=$(( $(date +%s) - start ))
if [ "$rc" = 0 ]; then result=passed; else result="FAILED (exit $rc)"; fi
printf '%-16s %3d:%02d  %s\n' "$name" $((secs / 60)) $((secs % 60)) "$result" > "$dir/$name"
exit "$rc"
