#!/bin/bash
cd /work/wt/delay && . .venv/bin/activate
export MPILAB_TESTBED_STATE_ROOT=/tmp/dly-state
now=$(date -u +%s); end=$(date -u -d '02:09:30' +%s); left=$((end - now))
date -u; cat /proc/loadavg
if [ $left -lt 90 ]; then echo "too late for a slot ($left s to 02:09:30)"; exit 0; fi
if [ $left -ge 280 ]; then D=1ms,10ms,100ms,100us; V="poll=--idle-poll;cal=--idle-poll|auto"; else D=1ms,10ms,100ms; V="cal=--idle-poll|auto"; fi
echo "left $left s: delays $D variants $V"
timeout --signal=TERM --kill-after=10 $left python3 bench/delayline_lone.py --runs 3 --count 5 --reuse --no-lan --prefix dly --delays $D --variants "$V" --json /tmp/dly-slot2.json
date -u; cat /proc/loadavg
