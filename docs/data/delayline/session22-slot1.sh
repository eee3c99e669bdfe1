#!/bin/sh
# Session 22, slot 1: the cold crossing (--cold-crossing) against the default, side by side
# (blocks of 5 runs, alternating), at 1 ms and 10 ms. Run from the repository's root as root.
cd "$(dirname "$0")/../../.." || exit 1
export MPILAB_TESTBED_STATE_ROOT=/tmp/d4-state MPILAB_BIN=$PWD/build/bin
MLOCK_BENCH_S=400 /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py \
  --prefix d4 --delays 1ms,10ms --runs 10 --block 5 --pairs 5 --warm 3 \
  --variants "default=;cold=--cold-crossing" --json docs/data/delayline/session22-slot1.json
