#!/usr/bin/env bash
# Reproduce the InfiniPath/XD1 study on this machine: the suite over every transport
# (shared memory, TCP loopback, TCP between testbed nodes, shaped, MPTCP over two rails),
# results and report in ${1:-results/suite-study}. Needs root for the testbed transports.
# Pass extra `mpilab compare` options after the directory (e.g. --quick).
set -eu
. "$(dirname "$0")/harness.sh"
out=${1:-results/suite-study}
[ $# -gt 0 ] && shift
mpilab compare --out "$out" --transport shm --transport tcp-loopback \
  --transport tcp-testbed --transport tcp-testbed-shaped --transport mptcp-testbed "$@"
