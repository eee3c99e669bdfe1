"""A stand-in for one `mpilab bench` launch in the tests of `mpilab diff --run`: writes a
results document of bcast and allreduce at three sizes, at a launch level that moves with
the launch's position in the run (a machine whose state drifts: adjacent launches share it),
bcast at 16 KiB and above times FACTOR, and appends SIDE to LOG (the order of launches).

    python3 fake_bench.py SIDE OUT LOG FACTOR [fail]"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tunekit import _doc, _meas  # noqa: E402


def main() -> int:
    side, out, log, factor = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])
    if sys.argv[5:] == ["fail"]:
        return 4
    k = len(log.read_text().split()) if log.is_file() else 0
    with open(log, "a") as f:
        f.write(side + "\n")
    rng = random.Random(7919 * k + 1)  # the same draws on every run
    level = math.exp(0.4 * math.sin(1.7 * (k // 2))) * math.exp(rng.gauss(0, 0.02))
    ms = []
    for op, t0 in (("bcast", 1e-6), ("allreduce", 2e-6)):
        for b in (1024, 16384, 65536):
            f = factor if op == "bcast" and b >= 16384 else 1.0
            t = t0 * (1 + b / 500) * f * level
            ms.append(_meas(op, "native", b, [t * math.exp(rng.gauss(0, 0.03))
                                              for _ in range(30)]))
    doc = _doc(ms)
    doc["provenance"]["date"] = f"2026-11-25T10:{k // 60:02d}:{k % 60:02d}Z"
    out.write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
