#!/bin/bash
# The 1024-rank simulated survey in its window (issue 26): a 12 GB cgroup v1 memory group,
# stopped by timeout at END (UTC); progress sampled every 30 s. TAG names the cgroup and the
# folder /tmp/TAG; BROWSER=--browser also loads the page in headless Chromium.
# Run as: /work/shared/tools/mlock build nice -n -10 docs/data/scale/run1024.sh
# (session 20: TAG=s20 END=05:10 from /work/wt/lead; session 32: TAG=s32 END=19:58
# BROWSER=--browser from /work/wt/s28)
END=${END:-05:10}
TAG=${TAG:-s20}
CG=/sys/fs/cgroup/memory/$TAG
OUT=/tmp/$TAG/sv1024
cd "$(dirname "$0")/../../.." && . .venv/bin/activate
mkdir -p /tmp/$TAG
mkdir -p $CG && echo 12G > $CG/memory.limit_in_bytes
echo $$ > $CG/cgroup.procs
echo 0 > $CG/memory.max_usage_in_bytes 2>/dev/null
end=$(date -u -d "$END" +%s); now=$(date -u +%s); left=$((end - now))
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) nice $(nice) timebox ${left}s"
rm -rf $OUT
( while sleep 30; do
    log=$OUT/n1024/survey/runner.log
    echo "$(date -u +%T) mem $(( $(cat $CG/memory.usage_in_bytes) / 1048576 )) MB max $(( $(cat $CG/memory.max_usage_in_bytes) / 1048576 )) MB load $(cut -d' ' -f1 /proc/loadavg) | $( [ -f $log ] && grep -v '^\$' $log | tail -1 | cut -c1-150)"
  done ) > /tmp/$TAG/progress1024.log 2>&1 &
mon=$!
python3 bench/scale_survey.py --ranks 1024 --out $OUT --json /tmp/$TAG/sv1024.json $BROWSER &
top=$!
while kill -0 $top 2>/dev/null && [ $(date -u +%s) -lt $end ]; do sleep 5; done
if kill -0 $top 2>/dev/null; then
  # time is up: SIGINT to the survey (scale_survey's child), which stops its runner and keeps
  # the measurements so far as results.partial.json
  echo "timebox reached $(date -u +%T): stopping the survey"
  for c in $(pgrep -P $top); do kill -INT $c; done
  for i in $(seq 1 12); do kill -0 $top 2>/dev/null || break; sleep 5; done
fi
wait $top
rc=$?
kill $mon
echo "end $(date -u +%T) rc $rc load $(cut -d' ' -f1-3 /proc/loadavg) cgroup max $(( $(cat $CG/memory.max_usage_in_bytes) / 1048576 )) MB"
# whatever the survey started (smpirun, smpimain) is in this cgroup: stop it, by pid
for p in $(cat $CG/cgroup.procs); do [ "$p" != $$ ] && kill -TERM "$p" 2>/dev/null; done
sleep 5
for p in $(cat $CG/cgroup.procs); do [ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null; done
