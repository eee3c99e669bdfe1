# The shared harness of the bench/ shell scripts (bench/harness.py for the Python ones).
# Source it first:  . "$(dirname "$0")/harness.sh"
#   REPO, BIN          this checkout and its default build's tools (MPILAB_BIN chooses another)
#   PYTHON             the interpreter (the project's .venv when built, else python3)
#   mpilab ARGS        this checkout's mpilab command
#   harness_mpirun VAR NP [ARGS...]
#                      VAR (an array) := the command prefix starting NP local ranks with
#                      Open MPI's mpirun, as every mpilab command starts them
#                      (mpilab.launch.Launcher), then ARGS
#   harness_loadavg    the 1, 5, 15 minute load, as a bench slot records it at its start
# Open MPI may run as root (OMPI_ALLOW_RUN_AS_ROOT*), and PYTHONPATH has python/ first.
# What moved here (issue 27): the scripts' own mpirun command lines and PYTHONPATH/root
# exports.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${MPILAB_BIN:-$REPO/build/bin}
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$REPO/.venv/bin/python" ]; then PYTHON=$REPO/.venv/bin/python; else PYTHON=python3; fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"

mpilab() { "$PYTHON" -m mpilab.cli "$@"; }

harness_mpirun() {
    local -n _harness_out=$1
    shift
    local words
    words=$("$PYTHON" "$REPO/bench/harness.py" mpirun "$@") || return 2
    mapfile -t _harness_out <<<"$words"
}

harness_loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
