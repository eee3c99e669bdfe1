#!/bin/bash
# Session 16 bench-slot driver: the next unfinished tasks (each resumable) until ~470 s are used.
cd /work/wt/tune; . .venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=results/tune16; mkdir -p $R
SLOT_S=${SLOT_S:-470}; . docs/data/tune/slot-lib.sh
sweep() {  # sweep NAME NP BUILD BUDGET
  export MPILAB_BIN=$PWD/$3/bin
  python -m mpilab.cli tune sweep --dir $R/$1 --np $2 --launches 3 --budget $4 --timeout 280 &&
  python -m mpilab.cli tune choose --dir $R/$1 --out $R/$1/choice.json > $R/$1/choice.txt
}
valid() {  # valid NAME NP BUILD KIND
  MPILAB_BIN=$PWD/$3/bin python -m mpilab.cli tune validate $R/$1/choice.json --np $2 \
    --dir $R/$1/validate --out $R/$1/validated.$4 --out-choice $R/$1/validated-choice.json \
    --pairs 8 --budget 15s --rounds 3 > $R/$1/validate.txt 2> $R/$1/validate.log
  local rc=$?; [ $rc -eq 1 ] && return 0; return $rc  # 1 = not validated: a result too
}
valid2() {  # valid2 NAME NP BUILD KIND: the same, fresh launches in validate2/
  MPILAB_BIN=$PWD/$3/bin python -m mpilab.cli tune validate $R/$1/choice.json --np $2 \
    --dir $R/$1/validate2 --out $R/$1/validated2.$4 --pairs 8 --budget 15s --rounds 3 \
    > $R/$1/validate2.txt 2> $R/$1/validate2.log
  local rc=$?; [ $rc -eq 1 ] && return 0; return $rc
}
inject() {  # inject NAME LAUNCHES
  MPILAB_BIN=$PWD/build/bin python3 bench/tune_diff_inject.py --trials 5 --launches $2 \
    --budget 2s --paired --dir $R/$1 --out $R/$1.json >> $R/$1.txt
}
export R; export -f sweep valid valid2 inject
for t in "$@"; do
  case $t in
    ompi2) task sweep-ompi2 sweep ompi2 2 build 40; task valid-ompi2 valid ompi2 2 build openmpi ;;
    mpich2) task sweep-mpich2 sweep mpich2 2 build-mpich 40
            task valid-mpich2 valid mpich2 2 build-mpich mpich ;;
    inject*) n=${t#inject}; task $t inject $t ${n%%[!0-9]*}
             # a fresh Open MPI validation (new launches) after the pruning rule was revised
             task valid2-ompi2 valid2 ompi2 2 build openmpi ;;
  esac
done
echo "slot: done $(date -u +%T)"
