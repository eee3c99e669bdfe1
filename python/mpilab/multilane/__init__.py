"""Multilane scatter/gather experiments on the emulated grid (docs/multilane.md):
running mpilab-multilane inside the testbed with the WAN sampled on its router
(`run`), loading its documents (`doc`), and the report page (`report`)."""
