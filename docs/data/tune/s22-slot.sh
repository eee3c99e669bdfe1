#!/bin/bash
# Session 22's bench-slot driver: `MLOCK_BENCH_S=480 mlock bench bash s22-slot.sh STEP...`,
# each STEP one of the functions below, run through slot-lib.sh's resumable `task` (done.NAME
# markers in $R) with what is left of the slot's SLOT_S seconds. The testbed (prefix tu4,
# s22-grid-2x4.toml) is brought up at the start when a step needs it and down at the end,
# also when the slot's SIGTERM ends the driver. Raw launches stay in $R (not in git).
cd /work/wt/tune4 || exit 1
. .venv/bin/activate
export PYTHONPATH=$PWD/python OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$PWD/results/tune22; mkdir -p $R
O=$PWD/docs/data/tune
SLOT_S=${SLOT_S:-465}
# session 22: everything ends by 11:32 UTC (the helper's deadline is 11:35)
END_S=$(( $(date -d 11:32:00 +%s) - $(date +%s) )); [ $END_S -lt $SLOT_S ] && SLOT_S=$END_S
. docs/data/tune/slot-lib.sh
M="python -m mpilab.cli"
TB="--testbed tu4"
down() { $M testbed down --prefix tu4 >/dev/null 2>&1; echo "slot: testbed tu4 down at $(date -u +%T)"; }
up() { $M testbed up $O/s22-grid-2x4.toml >/dev/null && echo "slot: testbed tu4 up at $(date -u +%T)"; trap down EXIT; trap 'exit 143' TERM; }
# 1. MPICH, 4 ranks on shared memory: session 21's choice (s21-mpich4-choice.json), its
#    selection file against MPICH's default, pruned and measured again
mpich4_validate() { task mpich4-validate sh -c "$M --mpi mpich tune validate $O/s21-mpich4-choice.json --mpich-yield --max-reps 1000 --np 4 --dir $R/mpich4-val \
  --out $R/mpich4-validated.json --out-choice $R/mpich4-validated-choice.json --pairs 8 --budget 10s --rounds 3 --timeout 100 > $O/s22-mpich4-validate.txt 2> $O/s22-mpich4-validate.log"; }
# 2. MPICH, the testbed's 2 x 4 grid: session 21's choice (s21-mpich8-choice.json), with the
#    sample floor (--min-samples 6: the large sizes get the 6 samples a side the test needs)
mpich8_validate() { ip netns list | grep -q '^tu4-' || up; task mpich8-validate sh -c "$M --mpi mpich tune validate $O/s22-mpich8-choice.json $TB --mpich-yield --np 8 --dir $R/mpich8-val \
  --out $R/mpich8-validated.json --out-choice $R/mpich8-validated-choice.json --max-reps 60 --min-samples 6 --pairs 6 --budget 6s --rounds 2 --timeout 150 > $O/s22-mpich8-validate.txt 2> $O/s22-mpich8-validate.log"; }
for s in "$@"; do $s; done
echo "slot end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
