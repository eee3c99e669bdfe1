#!/bin/bash
# bench-slot driver: runs the next unfinished tasks (each resumable) until ~585 s are used.
cd /work/wt/tune; . .venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
R=results/tune
SLOT_S=585; . docs/data/tune/slot-lib.sh
sweep() {  # sweep NAME NP BUILD BUDGET
  MPILAB_BIN=$PWD/$3/bin python -m mpilab.cli tune sweep --dir $R/$1 --np $2 --launches 3 \
    --budget $4 --timeout 280 && python - "$R/$1/state.json" <<'PY'
import json, sys; s = json.load(open(sys.argv[1]))
print("sweep spent_s", s.get("spent_s"), "launch walls", sum(sum(r.get("walls", [])) for r in s["runs"].values()))
PY
}
post() {  # post NAME NP BUILD KIND(openmpi|mpich)
  export MPILAB_BIN=$PWD/$3/bin
  python -m mpilab.cli tune choose --dir $R/$1 --out $R/$1/choice.json > $R/$1/choice.txt &&
  python -m mpilab.cli tune export $R/$1/choice.json --$4 $R/$1/file.$4 &&
  { python -m mpilab.cli tune verify $R/$1/choice.json $R/$1/file.$4 --np $2 > $R/$1/verify.txt; true; }
}
rvd() {  # rvd NAME NP BUILD KIND
  MPILAB_BIN=$PWD/$3/bin python3 bench/tune_rules_vs_default.py --choice $R/$1/choice.json \
    --file $R/$1/file.$4 --np $2 --dir $R/$1/${5:-rvd} --pairs 8 --budget 15s --out $R/$1/${5:-rvd}.json > $R/$1/${5:-rvd}.txt
}
post3() {  # post3 NAME NP BUILD KIND: export with the all-default collectives left out
  export MPILAB_BIN=$PWD/$3/bin
  python -m mpilab.cli tune export $R/$1/choice.json --$4 $R/$1/file2.$4 &&
  { python -m mpilab.cli tune verify $R/$1/choice.json $R/$1/file2.$4 --np $2 > $R/$1/verify2.txt; true; }
}
rvd3() {  # rvd3 NAME NP BUILD KIND
  MPILAB_BIN=$PWD/$3/bin python3 bench/tune_rules_vs_default.py --choice $R/$1/choice.json \
    --file $R/$1/file2.$4 --np $2 --dir $R/$1/rvd3 --pairs 8 --budget 15s --out $R/$1/rvd3.json > $R/$1/rvd3.txt
}
export R; export -f sweep post rvd post3 rvd3
task sweep-ompi4 sweep ompi4 4 build 40
task post-ompi4 post ompi4 4 build openmpi
task rvd8-ompi4 rvd ompi4 4 build openmpi
task post3-ompi2 post3 ompi2 2 build openmpi
task rvd3-ompi2 rvd3 ompi2 2 build openmpi
task post3-mpich2 post3 mpich2 2 build-mpich mpich
task rvd3-mpich2 rvd3 mpich2 2 build-mpich mpich
task inject10 bash -c "MPILAB_BIN=$PWD/build/bin python3 bench/tune_diff_inject.py --trials 5 --launches 10 --budget 2s --dir $R/inject10 --out $R/inject10.json >> $R/inject10.txt"
task post3-ompi4 post3 ompi4 4 build openmpi
task rvd3-ompi4 rvd3 ompi4 4 build openmpi
task sweep-mpich4 sweep mpich4 4 build-mpich 30
task post-mpich4 post mpich4 4 build-mpich mpich
task rvd8-mpich4 rvd mpich4 4 build-mpich mpich
echo "slot: all tasks done $(date -u +%T)"
