"""A stand-in for IMB-MPI1 in the tests of `mpilab tune validate --with`: prints IMB's tables
(t_avg in usec) for the benchmarks named, at the sizes of -msglen, for -npmin processes; with
Open MPI's rules-file arguments before `--` (the exported file loaded), each (collective,
size) is scaled by the factor FAKE_IMB_FACTORS gives it ("Allreduce:8=0.7,..."); a launch
level that moves with the launch's position (the count of lines in FAKE_IMB_LOG) scales all.

    python3 fake_imb.py [--mca ...] -- IMB-MPI1 -npmin N -msglen FILE ... BENCH..."""

from __future__ import annotations

import math
import os
import random
import sys
from pathlib import Path


def main() -> int:
    argv = sys.argv[1:]
    cut = argv.index("--")
    rules, args = "coll_tuned_dynamic_rules_filename" in argv[:cut], argv[cut + 2:]
    np, sizes, benches, k = 2, [0], [], 0
    while k < len(args):
        if args[k] in ("-npmin", "-msglen", "-time", "-mem"):
            if args[k] == "-npmin":
                np = int(args[k + 1])
            if args[k] == "-msglen":
                sizes = [int(x) for x in Path(args[k + 1]).read_text().split()]
            k += 2
            continue
        benches.append(args[k])
        k += 1
    fac = {}
    for item in filter(None, os.environ.get("FAKE_IMB_FACTORS", "").split(",")):
        name, f = item.split("=")
        fac[name] = float(f)
    log = Path(os.environ["FAKE_IMB_LOG"])
    n = len(log.read_text().split()) if log.is_file() else 0
    with open(log, "a") as f:
        f.write(("rules" if rules else "default") + "\n")
    rng = random.Random(7919 * n + 1)  # the same draws on every run
    level = math.exp(0.3 * math.sin(1.3 * (n // 2))) * math.exp(rng.gauss(0, 0.01))
    for b in benches:
        print("#" + "-" * 60)
        print(f"# Benchmarking {b}")
        print(f"# #processes = {np}")
        print("#" + "-" * 60)
        print("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]")
        for s in sizes:
            t = (1 + s / 500) * level * math.exp(rng.gauss(0, 0.01))
            if rules:
                t *= fac.get(f"{b}:{s}", 1.0)
            print(f"{s:>13} {1000:>12} {t * 0.9:>12.2f} {t * 1.1:>12.2f} {t:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
