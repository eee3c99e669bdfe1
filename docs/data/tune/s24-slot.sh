#!/bin/bash
# Session 24 bench slot: Open MPI on the 2 x 4 grid, session 21's choice validated again,
# now with the sample floor (--min-samples 6), one round
# (run from session 24's worktree /work/wt/s24 = main 37517a7; its launches and round files went to /tmp/s24/tune, copied to docs/data/tune/s24-*)
cd /work/wt/s24 && . .venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "slot start $(date -u +%T) load $(cat /proc/loadavg) rev $(git rev-parse --short HEAD)"
trap 'mpilab testbed down --prefix tu24 >/dev/null 2>&1; echo "testbed down $(date -u +%T)"' EXIT
trap 'exit 143' TERM
mpilab testbed up /tmp/s24/tune/grid.toml >/dev/null && echo "testbed tu24 up $(date -u +%T)"
mpilab tune validate ${CHOICE:-docs/data/tune/s21-ompi8-choice.json} --testbed tu24 --np 8 --dir ${VDIR:-/tmp/s24/tune/ompi8-val} \
  --out ${OUTP:-/tmp/s24/tune/ompi8}-validated.json --out-choice ${OUTP:-/tmp/s24/tune/ompi8}-validated-choice.json \
  --max-reps 60 --min-samples 6 --pairs 6 --budget 6s --rounds ${ROUNDS:-1} --timeout 150 \
  > ${OUTP:-/tmp/s24/tune/ompi8}-validate.txt 2> ${OUTP:-/tmp/s24/tune/ompi8}-validate.log
echo "validate rc $? at $(date -u +%T)"
