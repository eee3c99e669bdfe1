"""ReFrame configuration for mpilab's checks (docs/reframe.md).

Two systems:
* `local`: this machine, the checks' ranks started by Open MPI's mpirun (scheduler local);
* `slurm`: the single-node Slurm that `mpilab slurm up` starts (docs/mpi-stacks.md), jobs
  submitted with sbatch and followed with squeue (ReFrame's `squeue` scheduler: that Slurm
  keeps no accounting database for sacct), ranks started with `srun --mpi=pmix` (the checks add the
  option: ReFrame's configuration has no launcher options). Select it with
  `--system slurm` and SLURM_CONF pointing at that Slurm's configuration.

A site copies one of the two as its own partition (its scheduler, launcher and access
options) and keeps the checks as they are.
"""

site_configuration = {
    "systems": [
        {
            "name": "local",
            "descr": "this machine, mpirun",
            "hostnames": [".*"],
            "partitions": [
                {"name": "cpu", "scheduler": "local", "launcher": "mpirun",
                 "environs": ["mpilab"], "max_jobs": 1},
            ],
        },
        {
            "name": "slurm",
            "descr": "mpilab's single-node Slurm (mpilab slurm up), srun --mpi=pmix",
            "hostnames": [".*"],
            "partitions": [
                {"name": "node", "scheduler": "squeue", "launcher": "srun",
                 "environs": ["mpilab"], "max_jobs": 1, "time_limit": "10m"},
            ],
        },
    ],
    "environments": [
        {"name": "mpilab", "cc": "mpicc", "cxx": "mpicxx", "ftn": ""},
    ],
    "general": [
        {"check_search_path": ["reframe/"], "purge_environment": False,
         "resolve_module_conflicts": False},
    ],
}
