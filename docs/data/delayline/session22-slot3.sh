#!/bin/sh
# Session 22, slot 3: at 1 ms with idle CPUs polling (--idle-poll, so that the line's
# wake-ups do not drown the comparison), the cold crossing against the default advance,
# side by side (blocks of 5 runs). Run from the repository's root as root.
cd "$(dirname "$0")/../../.." || exit 1
export MPILAB_TESTBED_STATE_ROOT=/tmp/d4-state MPILAB_BIN=$PWD/build/bin
MLOCK_BENCH_S=360 /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py \
  --prefix d4 --delays 1ms --runs 10 --block 5 --pairs 5 --warm 3 \
  --variants "poll=--idle-poll;pollcold=--idle-poll --cold-crossing" \
  --json docs/data/delayline/session22-slot3.json
