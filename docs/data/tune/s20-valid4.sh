#!/bin/bash
cd /work/wt/lead; . .venv/bin/activate
export PYTHONPATH=/work/wt/lead/python MPILAB_BIN=/work/wt/lead/build/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=/tmp/s20/tune
echo "validate start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 590 python -m mpilab.cli tune validate $R/ompi4/choice.json --np 4 --dir $R/ompi4/validate \
  --out $R/ompi4/validated.openmpi --out-choice $R/ompi4/validated-choice.json \
  --pairs 8 --budget 15s --rounds 3 > $R/ompi4-validate.txt 2> $R/ompi4-validate.log
echo "validate rc $? end $(date -u +%T)"
