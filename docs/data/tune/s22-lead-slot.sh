#!/bin/bash
# Session 22, lead: the MPICH grid's pruned file (allreduce only) against MPICH's default, one round.
cd /work/wt/lead || exit 1
. .venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
O=docs/data/tune R=/tmp/s22/tune-pruned
rm -rf $R; mkdir -p $R
echo "slot: start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) rev $(git rev-parse --short HEAD)"
down() { mpilab testbed down --prefix tu4 >/dev/null 2>&1; echo "slot: testbed down $(date -u +%T)"; }
trap down EXIT; trap 'exit 143' TERM
mpilab testbed up $O/s22-grid-2x4.toml >/dev/null || exit 1
echo "slot: testbed up $(date -u +%T)"
mpilab --mpi mpich tune validate $O/s22-mpich8-pruned-choice.json --testbed tu4 --mpich-yield --np 8 \
  --dir $R/val --out $R/validated.json --out-choice $R/validated-choice.json \
  --max-reps 60 --min-samples 6 --pairs 6 --budget 6s --rounds 1 --timeout 150 \
  > $O/s22-mpich8-pruned-validate.txt 2> $O/s22-mpich8-pruned-validate.log
echo "slot: validate rc $? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
