#!/bin/sh
# Session 24, slot 1: the delays session 22 did not reach (10 us, 100 ms) and 10 ms, with
# idle CPUs polling, the default advance against the cold crossing, side by side (blocks of
# 5 runs). Run from the repository's root as root.
cd "$(dirname "$0")/../../.." || exit 1
export MPILAB_TESTBED_STATE_ROOT=/tmp/d24-state MPILAB_BIN=$PWD/build/bin
MLOCK_BENCH_S=600 /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py \
  --prefix d24 --delays 10us,10ms,100ms --runs 10 --block 5 --pairs 5 --warm 3 \
  --variants "poll=--idle-poll;pollcold=--idle-poll --cold-crossing" \
  --json docs/data/delayline/session24-slot1.json
