#!/bin/bash
# session 21, slot E: no advance (issue 25); the default's side of it is slot D
cd /work/wt/lead
export PYTHONPATH=python
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hope --delays 1ms,10ms --line-args=--no-advance --json /tmp/s21/hop-e-noadv.json
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hope --delays 1ms,10ms --line-args= --json /tmp/s21/hop-e-default.json
