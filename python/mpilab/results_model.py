"""The typed view of an `mpilab.results/1` document: the dataclasses mpilab.results fills
(a measurement, its statistics, the pair matrices, the models and their predictions, the
clock synchronisation) and the schema name. No reading, no checking: mpilab.results loads
and validates, mpilab.results_check builds these from a document that passed the schema."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "mpilab.results/1"
TIMINGS = ("max", "root", "global", "opspec", "p2p")


@dataclass(frozen=True, slots=True)
class Precision:
    cl: float
    eps: float
    min_reps: int
    max_reps: int


@dataclass(frozen=True, slots=True)
class Stats:
    mean: float
    ci_half: float
    rel_err: float
    median: float
    min: float
    max: float
    stdev: float
    reps: int
    invalid: int
    converged: bool


@dataclass(frozen=True, slots=True)
class Measurement:
    index: int
    op: str
    impl: str
    timing: str
    bytes: int
    stats: Stats
    isolation: str | None = None
    root: int | None = None
    ranks: int | None = None
    precision: Precision | None = None
    samples: tuple[float, ...] = ()
    valid: tuple[bool, ...] = ()
    # point-to-point only
    pair: tuple[int, int] | None = None
    bytes_back: int | None = None
    schedule: str | None = None
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_p2p(self) -> bool:
        return self.op == "p2p"


@dataclass(frozen=True, slots=True)
class PairMatrix:
    """One compact all-pairs measurement (docs/results-schema.md, "Pair matrix"): per-pair
    arrays in (i, j) order. `Results.measurements` also holds its pairs one by one."""
    index: int                     # position in the file's measurements array
    op: str
    impl: str
    timing: str
    bytes: int
    bytes_back: int
    design: str                    # "full" or "sampled"
    ranks: int | None
    i: tuple[int, ...]
    j: tuple[int, ...]
    median: tuple[float, ...]
    reps: tuple[int, ...]
    schedule: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def times(self) -> dict[tuple[int, int], float]:
        """{(i, j): median round trip} of every pair."""
        return dict(zip(zip(self.i, self.j, strict=True), self.median, strict=True))


@dataclass(frozen=True, slots=True)
class HockneyRange:
    lo: int
    hi: int
    alpha: float
    beta: float


@dataclass(frozen=True, slots=True)
class HockneyPair:
    i: int
    j: int
    alpha: float
    beta: float
    ranges: tuple[HockneyRange, ...] = ()

    def predict(self, nbytes: float) -> float:
        """One-way time of a message of nbytes, using the per-protocol piece if any."""
        for r in self.ranges:
            if r.lo <= nbytes <= r.hi:
                return r.alpha + r.beta * nbytes
        return self.alpha + self.beta * nbytes


@dataclass(frozen=True, slots=True)
class LogGPPoint:
    """Per-size LogGP measurement of one pair (medians, seconds)."""
    bytes: int
    rtt: float
    os: float
    orr: float
    g: float


@dataclass(frozen=True, slots=True)
class LogGPParams:
    """LogGP parameters (seconds, seconds per byte); o_s(m) = os + os_per_byte * m,
    o_r(m) = orr + or_per_byte * m, g(m) = g + G * m."""
    L: float
    os: float
    orr: float
    g: float
    G: float
    os_per_byte: float = 0.0
    or_per_byte: float = 0.0
    flags: tuple[str, ...] = ()

    def time(self, nbytes: float) -> float:
        """One-way time of one message: os + L + max(m - 1, 0) G + or."""
        return self.os + self.L + max(nbytes - 1.0, 0.0) * self.G + self.orr


@dataclass(frozen=True, slots=True)
class LogGPRange:
    lo: int
    hi: int
    params: LogGPParams


@dataclass(frozen=True, slots=True)
class LogGPPair:
    i: int
    j: int
    params: LogGPParams | None  # None: the fit failed (see error)
    per_size: tuple[LogGPPoint, ...] = ()
    ranges: tuple[LogGPRange, ...] = ()
    error: str | None = None

    def params_for(self, nbytes: float) -> LogGPParams | None:
        """The parameters of the protocol range holding nbytes (nearest range outside)."""
        if not self.ranges:
            return self.params
        return min(self.ranges, key=lambda r: max(r.lo - nbytes, nbytes - r.hi, 0.0)).params


@dataclass(frozen=True, slots=True)
class Prediction:
    op: str
    impl: str
    bytes: int
    predicted: float
    measured: float | None
    timing: str | None = None  # the timing method of the measured value, if given
    statistic: str = "median"  # which statistic of the measurement "measured" is

    @property
    def rel_error(self) -> float | None:
        if self.measured is None or self.measured == 0:
            return None
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True, slots=True)
class ClockSync:
    method: str
    max_residual_s: float
    ranks: tuple[dict[str, Any], ...] = ()
    # why --sync auto chose the method ("" when the method was named)
    chosen_because: str = ""

    @property
    def label(self) -> str:
        """The method, and auto's reason when auto chose it."""
        if not self.chosen_because:
            return self.method
        return f"{self.method} (auto: {self.chosen_because})"


@dataclass
class Results:
    path: str
    provenance: dict[str, Any]
    measurements: list[Measurement]
    hockney: list[HockneyPair]
    predictions: list[Prediction]
    raw: dict[str, Any]
    sources: list[str] = field(default_factory=list)
    loggp: list[LogGPPair] = field(default_factory=list)
    loggp_predictions: list[Prediction] = field(default_factory=list)
    pair_matrices: list[PairMatrix] = field(default_factory=list)

    @property
    def clock_sync(self) -> ClockSync | None:
        cs = self.provenance.get("clock_sync")
        if not isinstance(cs, dict):
            return None
        res = cs.get("max_residual_s")
        why = cs.get("chosen_because")
        return ClockSync(str(cs.get("method", "")), math.nan if res is None else float(res),
                         tuple(cs.get("ranks") or ()), why if isinstance(why, str) else "")

    def p2p(self) -> list[Measurement]:
        return [m for m in self.measurements if m.is_p2p]

    def collectives(self) -> list[Measurement]:
        return [m for m in self.measurements if not m.is_p2p]

    def ops(self) -> list[str]:
        """Collective operations present, in first-seen order."""
        seen: dict[str, None] = {}
        for m in self.collectives():
            seen.setdefault(m.op, None)
        return list(seen)


def reindex(m: Measurement, idx: int) -> Measurement:
    """m as the measurement at index idx of another view (a merged or expanded one)."""
    return dataclasses.replace(m, index=idx)
