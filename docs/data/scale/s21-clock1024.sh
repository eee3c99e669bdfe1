#!/bin/bash
# Session 21: bench/clocksync_scale.py runs that reach 1024 simulated ranks, in a 6 GB cgroup
# v1 memory group (issue 26, clock synchronisation at scale; simulated time is deterministic).
# Run as: /work/shared/tools/mlock build docs/data/scale/s21-clock1024.sh NAME ARGS...
# writes docs/data/scale/s21-NAME.json and .log (the script's summary lines).
set -u
name=$1; shift
CG=/sys/fs/cgroup/memory/scale3
cd "$(dirname "$0")/../../.."
mkdir -p $CG && echo 6G > $CG/memory.limit_in_bytes
echo $$ > $CG/cgroup.procs
echo 0 > $CG/memory.max_usage_in_bytes 2>/dev/null
start=$(date -u +%s)
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg): bench/clocksync_scale.py $*"
timeout 590 python3 bench/clocksync_scale.py "$@" --out "docs/data/scale/s21-$name.json"
rc=$?
echo "end $(date -u +%T) rc $rc wall $(( $(date -u +%s) - start )) s load $(cut -d' ' -f1-3 /proc/loadavg) cgroup max $(( $(cat $CG/memory.max_usage_in_bytes) / 1048576 )) MB"
