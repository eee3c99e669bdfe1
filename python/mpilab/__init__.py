"""mpilab: measure, model, tune and harden MPI communication."""

__version__ = "0.1.0"
