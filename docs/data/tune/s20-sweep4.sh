#!/bin/bash
cd /work/wt/lead; . .venv/bin/activate
export PYTHONPATH=/work/wt/lead/python MPILAB_BIN=/work/wt/lead/build/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=/tmp/s20/tune
echo "sweep start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
python -m mpilab.cli tune sweep --dir $R/ompi4 --np 4 --launches 3 --budget 40 --timeout 280 > $R/ompi4-sweep.txt 2> $R/ompi4-sweep.log
echo "sweep rc $? end $(date -u +%T)"
python -m mpilab.cli tune choose --dir $R/ompi4 --out $R/ompi4/choice.json > $R/ompi4-choice.txt
echo "choose rc $?"
