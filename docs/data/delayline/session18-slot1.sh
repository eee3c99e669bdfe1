#!/bin/bash
cd /work/wt/delay && . .venv/bin/activate
export MPILAB_TESTBED_STATE_ROOT=/tmp/dly-state
date -u; cat /proc/loadavg
timeout 90 python -m pytest -q -x tests/python/test_testbed_delayline.py -k trim > /tmp/dly-slot1-pytest.txt 2>&1
prc=$?
tail -15 /tmp/dly-slot1-pytest.txt
if [ "$prc" = 0 ]; then V="cal=--idle-poll|auto"; else V="poll=--idle-poll"; fi
date -u
python3 bench/delayline_lone.py --runs 10 --count 5 --reuse --no-lan --prefix dly --variants "$V" --json /tmp/dly-slot1.json
date -u; cat /proc/loadavg
python3 bench/delayline_lone.py --runs 3 --count 5 --reuse --no-lan --prefix dly --variants "poll=--idle-poll" --json /tmp/dly-slot1b.json
date -u
