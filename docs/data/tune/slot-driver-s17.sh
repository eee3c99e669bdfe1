#!/bin/bash
# Session 17 bench-slot driver (issue 31): the next unfinished tasks (each resumable) until
# SLOT_S seconds are used. Tasks: vexp (Open MPI 2 ranks, the s16 choice validated with the
# default's own algorithms explicit), rvdzero (the same choice exported with 0 for the
# default, against no file, side by side), inject (diff on an injected 10% slowdown:
# paired signed-rank, 30 pairs, a second look with 30 more where undecided), vexp2 (fresh).
cd /work/wt/tune; . .venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPILAB_BIN=$PWD/build/bin
R=results/tune17; mkdir -p $R
C=docs/data/tune/s17-ompi2-choice.json
SLOT_S=${SLOT_S:-410}; . docs/data/tune/slot-lib.sh
vexp() {  # vexp DIR
  python -m mpilab.cli tune validate $C --np 2 --dir $R/$1 --out $R/$1.conf \
    --out-choice $R/$1-choice.json --pairs 8 --budget 15s --rounds 3 --explicit-default \
    > $R/$1.txt 2> $R/$1.log
  local rc=$?; [ $rc -eq 1 ] && return 0; return $rc  # 1 = not validated: a result too
}
rvdzero() {
  python -m mpilab.cli tune export $C --openmpi $R/zero.conf > /dev/null &&
  python3 bench/tune_rules_vs_default.py --choice $C --file $R/zero.conf --np 2 \
    --dir $R/rvdzero --pairs 8 --budget 15s --out $R/rvdzero.json > $R/rvdzero.txt
}
inject() {
  python3 bench/tune_diff_inject.py --trials 5 --launches 30 --max-launches 60 \
    --budget 2s --paired --dir $R/inj --out $R/inj.json >> $R/inj.txt
}
export R C; export -f vexp rvdzero inject
for t in "$@"; do
  case $t in
    vexp) task vexp vexp vexp ;;
    vexp2) task vexp2 vexp vexp2 ;;
    rvdzero) task rvdzero rvdzero ;;
    inject) task inject inject ;;
  esac
done
echo "slot: done $(date -u +%T)"
