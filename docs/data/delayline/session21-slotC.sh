#!/bin/bash
# session 21, slot C: the delay line's arrival dating, side by side (issue 25)
cd /work/wt/lead
export PYTHONPATH=python
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hopc --delays 1ms,10ms --line-args "" --json /tmp/s21/hop-c-ingress.json
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hopc --delays 1ms,10ms --line-args "--arrival tun" --json /tmp/s21/hop-c-tun.json
python3 bench/testbed_hop_capture.py --runs 5 --pairs 5 --prefix hopc --delays 100us --line-args "--busy-poll on" --json /tmp/s21/hop-c-busy100.json
