#!/bin/sh
# Session 24, slot 2: 100 ms (slot 1 ended before it), with
# idle CPUs polling, the default advance against the cold crossing, side by side (blocks of
# 5 runs). Run from the repository's root as root.
cd "$(dirname "$0")/../../.." || exit 1
export MPILAB_TESTBED_STATE_ROOT=/tmp/d25-state MPILAB_BIN=$PWD/build/bin
MLOCK_BENCH_S=600 /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py \
  --prefix d25 --delays 100ms --runs 10 --block 5 --pairs 5 --warm 3 \
  --variants "poll=--idle-poll;pollcold=--idle-poll --cold-crossing" \
  --json docs/data/delayline/session24-slot2.json
