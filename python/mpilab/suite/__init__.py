"""The interconnect evaluation suite's Python side: `mpilab compare` runs the suite's
benchmarks (C, through the mpilab-bench runner) over several MPI transports and writes a
comparison report with one curve per transport. See docs/suite.md."""
