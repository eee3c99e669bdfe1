"""The mpilab Python package: tuning the MPI library (mpilab tune; docs/tune.md)."""
