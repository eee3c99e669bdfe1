#!/bin/bash
# Session 21's bench-slot driver: `mlock bench bash s21-slot.sh STEP...`, each STEP one of the
# functions below, run through slot-lib.sh's resumable `task` (done.NAME markers in $R) with
# what is left of the slot's SLOT_S seconds. Raw launches stay in $R (not in git).
cd /work/wt/tune3 || exit 1
. .venv/bin/activate
export PYTHONPATH=$PWD/python OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$PWD/results/tune21; mkdir -p $R
O=$PWD/docs/data/tune
SLOT_S=${SLOT_S:-465}
. docs/data/tune/slot-lib.sh
M="python -m mpilab.cli"
# a step that needs an earlier one stops the driver when that one is not done
after() { [ -f $R/done.$1 ] || { echo "slot: $1 not done; stopping"; echo "slot end $(date -u +%T)"; exit 0; }; }
TB="--testbed tn3"
# 1. Open MPI, the testbed's 2 x 4 grid, 8 ranks
ompi8_sweep() { task ompi8-sweep sh -c "$M tune sweep $TB --dir $R/ompi8 --np 8 --launches 3 \
  --budget 20 --max-reps 60 --sizes 4,256,16K,256K --rounds 2 --timeout 200 > $O/s21-ompi8-sweep.txt 2> $O/s21-ompi8-sweep.log"; }
ompi8_choose() { after ompi8-sweep; task ompi8-choose sh -c "$M tune choose --dir $R/ompi8 --out $R/ompi8/choice.json > $O/s21-ompi8-choice.txt && cp $R/ompi8/choice.json $O/s21-ompi8-choice.json && cp $R/ompi8/state.json $O/s21-ompi8-state.json"; }
ompi8_validate() { after ompi8-choose; task ompi8-validate sh -c "$M tune validate $R/ompi8/choice.json $TB --np 8 --dir $R/ompi8-val \
  --out $R/ompi8-validated.conf --max-reps 60 --pairs 6 --budget 8s --rounds 2 --timeout 200 > $O/s21-ompi8-validate.txt 2> $O/s21-ompi8-validate.log"; }
# 2. MPICH, the same grid (waiting ranks yield: --mpich-yield)
mpich8_sweep() { task mpich8-sweep sh -c "$M --mpi mpich tune sweep $TB --mpich-yield --dir $R/mpich8 --np 8 --launches 3 \
  --budget 20 --max-reps 60 --sizes 4,256,16K,256K --rounds 2 --timeout 200 > $O/s21-mpich8-sweep.txt 2> $O/s21-mpich8-sweep.log"; }
mpich8_choose() { after mpich8-sweep; task mpich8-choose sh -c "$M --mpi mpich tune choose --dir $R/mpich8 --out $R/mpich8/choice.json > $O/s21-mpich8-choice.txt && cp $R/mpich8/choice.json $O/s21-mpich8-choice.json && cp $R/mpich8/state.json $O/s21-mpich8-state.json"; }
mpich8_validate() { after mpich8-choose; task mpich8-validate sh -c "$M --mpi mpich tune validate $R/mpich8/choice.json $TB --mpich-yield --np 8 --dir $R/mpich8-val \
  --out $R/mpich8-validated.json --max-reps 60 --pairs 6 --budget 8s --rounds 2 --timeout 200 > $O/s21-mpich8-validate.txt 2> $O/s21-mpich8-validate.log"; }
# 3. MPICH, 4 ranks on shared memory (2 cores)
mpich4_sweep() { task mpich4-sweep sh -c "$M --mpi mpich tune sweep --mpich-yield --max-reps 1000 --dir $R/mpich4 --np 4 --launches 3 \
  --budget 40 --timeout 200 > $O/s21-mpich4-sweep.txt 2> $O/s21-mpich4-sweep.log"; }
mpich4_choose() { after mpich4-sweep; task mpich4-choose sh -c "$M --mpi mpich tune choose --dir $R/mpich4 --out $R/mpich4/choice.json > $O/s21-mpich4-choice.txt && cp $R/mpich4/choice.json $O/s21-mpich4-choice.json && cp $R/mpich4/state.json $O/s21-mpich4-state.json"; }
mpich4_validate() { after mpich4-choose; task mpich4-validate sh -c "$M --mpi mpich tune validate $R/mpich4/choice.json --mpich-yield --max-reps 1000 --np 4 --dir $R/mpich4-val \
  --out $R/mpich4-validated.json --pairs 8 --budget 15s --rounds 3 --timeout 200 > $O/s21-mpich4-validate.txt 2> $O/s21-mpich4-validate.log"; }
# MPICH with and without the yield library, side by side (4 ranks on shared memory, 8 on the grid)
yield4() { task yield4 sh -c "MPILAB_BIN=$PWD/build-mpich/bin python3 bench/tune_mpich_yield.py --np 4 --pairs 1 --limit 45 --budget 2s --out $O/s21-yield4.json > $O/s21-yield4.txt 2>&1"; }
yield8() { task yield8 sh -c "MPILAB_BIN=$PWD/build-mpich/bin python3 bench/tune_mpich_yield.py --np 8 $TB --pairs 1 --limit 45 --budget 2s --out $O/s21-yield8.json > $O/s21-yield8.txt 2>&1"; }
for s in "$@"; do $s; done
# slot 4 (queued before this line was added): what time is left goes to the MPICH 4-rank sweep
[ "$*" = "mpich8_sweep mpich8_choose yield4 yield8" ] && mpich4_sweep
echo "slot end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
