"""TCP retransmissions around a run, and what they do to a bandwidth estimate.

`mpilab bench` reads the kernel's TCP counters (`/proc/net/snmp`, line `Tcp:`: OutSegs and
RetransSegs) of the network namespaces its ranks run in, before the job starts and after it
ends: on the testbed every node's namespace, otherwise the launching process's own
namespace (local ranks share it; under srun the ranks' hosts are not reachable and nothing
is read). The difference is recorded in the results (`provenance.tcp`).

A TCP stream that loses segments at a shaper's queue and sends them again delivers its
bytes more slowly than the wire's rate: the fitted time per byte (Hockney beta, LogGP G)
then sits above the wire's. Retransmissions can only make a stream slower, never faster,
so the correction is one-sided: the fast end (`lo`) of beta's and G's intervals moves down
by WIDEN_FACTOR times the retransmitted share of segments, the estimate itself is kept
(docs/models.md, "Retransmissions"). The interval before the widening stays in
`lo_measured` and the parameter carries the flag `retrans_widened`.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

SNMP = "/proc/net/snmp"
#: the fast end of beta's and G's intervals moves down by this many times the retransmitted
#: share: a lost segment costs the stream its resend and the recovery after the loss (the
#: window shrinks; the wire idles while it refills). On the shaped 2 ms / 100 Mbit/s WAN the
#: excess of G over the wire's time per byte was 0.3 to 3.4 times the retransmitted share
#: (docs/models.md, "Retransmissions").
WIDEN_FACTOR = 3.0
#: the parameter flag of a widened interval (mpilab.quality.RETRANS_WIDENED); this module
#: stays free of the analysis modules, which mpilab bench imports only once the job runs
RETRANS_WIDENED = "retrans_widened"
COUNTERS_INVALID = "counters_invalid"
_KEYS = ("OutSegs", "RetransSegs")
_PARAMS = (("hockney", "beta"), ("loggp", "G"))


def parse_snmp(text: str) -> dict[str, int] | None:
    """OutSegs and RetransSegs from the text of /proc/net/snmp (the `Tcp:` header line and
    the value line after it); None when they are missing or not non-negative integers."""
    lines = [ln.split() for ln in text.splitlines() if ln.startswith("Tcp:")]
    if len(lines) < 2 or len(lines[0]) != len(lines[1]):
        return None
    row = dict(zip(lines[0][1:], lines[1][1:], strict=True))
    got: dict[str, int] = {}
    for k in _KEYS:
        v = row.get(k)
        if v is None or not v.isdigit():
            return None
        got[k] = int(v)
    return got


def _read_local() -> dict[str, int] | None:
    try:
        with open(SNMP, encoding="ascii", errors="replace") as f:
            return parse_snmp(f.read())
    except OSError:
        return None


def _read_ns(ns: str) -> dict[str, int] | None:
    try:
        p = subprocess.run(["ip", "netns", "exec", ns, "cat", SNMP], capture_output=True,
                           text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_snmp(p.stdout) if p.returncode == 0 else None


def read(namespaces: list[str] | None) -> dict[str, int] | None:
    """The counters summed over `namespaces` (None: this process's own namespace); None when
    any of them cannot be read."""
    if namespaces is None:
        return _read_local()
    tot = dict.fromkeys(_KEYS, 0)
    for ns in namespaces:
        c = _read_ns(ns)
        if c is None:
            return None
        for k in _KEYS:
            tot[k] += c[k]
    return tot


def delta(before: dict[str, int] | None, after: dict[str, int] | None,
          source: str) -> dict[str, Any]:
    """The counters' change over the run as recorded in provenance.tcp: out_segs,
    retrans_segs, retrans_fraction; counters missing, gone backwards (a namespace made
    again, a counter wrapped) or no segment sent: the fraction is null, and missing or
    backwards counters carry the flag counters_invalid."""
    rec: dict[str, Any] = {"source": source, "out_segs": None, "retrans_segs": None,
                           "retrans_fraction": None, "widen_factor": WIDEN_FACTOR, "flags": []}
    if before is None or after is None:
        rec["flags"] = [COUNTERS_INVALID]
        return rec
    out = after["OutSegs"] - before["OutSegs"]
    re = after["RetransSegs"] - before["RetransSegs"]
    if out < 0 or re < 0 or re > out:
        rec["flags"] = [COUNTERS_INVALID]
        return rec
    rec["out_segs"], rec["retrans_segs"] = out, re
    rec["retrans_fraction"] = re / out if out > 0 else None
    return rec


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def widen(doc: dict[str, Any], tcp: dict[str, Any]) -> int:
    """Record tcp in doc's provenance and, when segments were retransmitted, widen the fast
    end of every Hockney beta's and LogGP G's interval in place (see the module's text).
    Returns how many intervals were widened."""
    prov = doc.setdefault("provenance", {})
    prov["tcp"] = tcp
    r = _num(tcp.get("retrans_fraction"))
    if r is None or r <= 0 or COUNTERS_INVALID in (tcp.get("flags") or []):
        return 0
    shift = min(WIDEN_FACTOR * r, 1.0)
    models = doc.get("models") if isinstance(doc.get("models"), dict) else {}
    done = 0
    for kind, name in _PARAMS:
        m = models.get(kind)
        for p in (m.get("pairs") or []) if isinstance(m, dict) else []:
            q = (p.get("quality") or {}).get(name) if isinstance(p, dict) else None
            lo = _num(q.get("lo")) if isinstance(q, dict) else None
            if lo is None or "lo_measured" in q:  # type: ignore[operator]
                continue
            assert isinstance(q, dict)
            q["lo_measured"] = lo
            q["lo"] = lo * (1.0 - shift)
            flags = q.get("flags") if isinstance(q.get("flags"), list) else []
            q["flags"] = [*flags, RETRANS_WIDENED] if RETRANS_WIDENED not in flags else flags
            done += 1
    return done


def note(tcp: dict[str, Any], widened: int) -> str | None:
    """The one line mpilab bench prints about the counters (None: nothing to say)."""
    if COUNTERS_INVALID in (tcp.get("flags") or []):
        return ("mpilab: TCP counters unreadable or gone backwards during the run: "
                "retransmissions not accounted for (provenance.tcp flags counters_invalid)")
    r = _num(tcp.get("retrans_fraction"))
    if r is None or r <= 0 or widened == 0:
        return None
    return (f"mpilab: TCP sent {r * 100:.3f}% of its {tcp['out_segs']} segments again during "
            f"the run: a stream that loses segments runs below the wire's rate, so the fast "
            f"end of {widened} beta/G interval(s) moved down by "
            f"{min(WIDEN_FACTOR * r, 1.0) * 100:.2f}% ({WIDEN_FACTOR:g} x that share; the "
            "estimates are unchanged)")


def namespaces_of(testbed: str | None) -> tuple[list[str] | None, str]:
    """The namespaces the ranks of a run run in and the source's name: the testbed's node
    namespaces, or this process's own (None)."""
    if testbed is None:
        return None, "the launching process's namespace"
    from mpilab.testbed import net

    spec = net.current_spec(testbed)
    return [spec.ns(n) for n in spec.node_names()], f"testbed {testbed} node namespaces"


@dataclass
class Count:
    """The counters of a run's namespaces read before its job; `apply` reads them again once
    the job has ended and records the change in a results document (see `widen`)."""
    namespaces: list[str] | None
    source: str
    before: dict[str, int] | None
    applied: bool = False

    @classmethod
    def start(cls, testbed: str | None) -> Count:
        nss, source = namespaces_of(testbed)
        return cls(nss, source, read(nss))

    def apply(self, doc: dict[str, Any]) -> str | None:
        """Record the change in doc (in place, once) and return the line to print (or None)."""
        tcp = delta(self.before, read(self.namespaces), self.source)
        self.applied = True
        return note(tcp, widen(doc, tcp))
