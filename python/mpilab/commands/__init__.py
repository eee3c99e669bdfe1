"""Subcommands of the mpilab CLI."""
