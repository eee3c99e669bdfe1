#!/bin/bash
# session 21, slot D: advance or not, side by side (issue 25)
cd /work/wt/lead
export PYTHONPATH=python
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hopd --delays 1ms,10ms --line-args "" --json /tmp/s21/hop-d-default.json
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hopd --delays 1ms,10ms --line-args "--no-advance" --json /tmp/s21/hop-d-noadv.json
