#!/bin/sh
# Session 22, slot 2: at 100 us (a sleeping line), the default against --spin-last auto,
# --spin-last auto with --idle-poll, and --cold-crossing, side by side (blocks of 5 runs).
# Run from the repository's root as root.
cd "$(dirname "$0")/../../.." || exit 1
export MPILAB_TESTBED_STATE_ROOT=/tmp/d4-state MPILAB_BIN=$PWD/build/bin
MLOCK_BENCH_S=400 /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py \
  --prefix d4 --delays 100us --runs 10 --block 5 --pairs 5 --warm 3 \
  --variants "default=;spin=--spin-last auto;spinpoll=--spin-last auto --idle-poll;cold=--cold-crossing" \
  --json docs/data/delayline/session22-slot2.json
