"""What a `testbed run --pathmig` job's user is told about protection while it runs: which
connections have an alternate path (ARMED), which ran without one (a rail down when the
job started, a peer the policy gives no alternate) and when they were armed after all.
ArmWatch reads the agents' event logs as they grow (complete lines only) and turns the
client sides' state transitions into short lines; `lines()` and `summary()` are pure over
the events fed to it (unit-tested)."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_RAIL = re.compile(r"\(rail (\d+)\)")
SHORT_S = 1.0


class ArmWatch:
    """Feed it the agents' events (feed()); it keeps, per connection (node, token), whether
    it was ever ARMED and when. `unprotected_at_start`: the job started with fewer than two
    working rails, so every connection starts without an alternate: the first arming of
    each is then announced (with its rail)."""

    def __init__(self, t0: float, unprotected_at_start: bool,
                 addr_node: dict[str, str] | None = None) -> None:
        self.t0 = t0
        self.addr_node = addr_node or {}
        self.unprotected_at_start = unprotected_at_start
        self.conns: dict[tuple[str, str], dict[str, Any]] = {}
        self.pending: list[str] = []

    def feed(self, e: dict[str, Any]) -> None:
        node, tok = str(e.get("node", "?")), e.get("token")
        if not tok:
            return
        key = (node, str(tok))
        ev, typ = e.get("event"), e.get("type")
        if ev == "kernel" and typ == "closed" and key in self.conns:
            self.conns[key]["closed_at"] = float(e.get("time", self.t0))
        if ev == "kernel" and typ in ("created", "established"):
            c = self.conns.setdefault(key, {"peer": None, "armed_at": None, "rail": None,
                                            "server": bool(e.get("server_side")),
                                            "seen": float(e.get("time", self.t0)),
                                            "closed": False})
            c["server"] = bool(e.get("server_side", c["server"]))
            c["peer"] = c["peer"] or self.addr_node.get(str(e.get("daddr")))
        elif ev == "state":
            c = self.conns.setdefault(key, {"peer": e.get("peer"), "armed_at": None,
                                            "rail": None, "server": False,
                                            "seen": float(e.get("time", self.t0)),
                                            "closed": False})
            c["peer"] = e.get("peer") or c["peer"]
            if e.get("to") == "CLOSED":
                c["closed"] = True
            if e.get("to") == "ARMED" and c["armed_at"] is None:
                c["armed_at"] = float(e.get("time", self.t0))
                m = _RAIL.search(str(e.get("cause", "")))
                c["rail"] = int(m.group(1)) if m else None
                if self.unprotected_at_start and not c["server"]:
                    rail = f" on rail {c['rail']}" if c["rail"] is not None else ""
                    self.pending.append(
                        f"pathmig: +{c['armed_at'] - self.t0:.1f} s: connection {key[1]} "
                        f"({node} -> {c['peer'] or '?'}) armed{rail}: it has an alternate "
                        "path now")

    def lines(self) -> list[str]:
        """The notices due since the last call."""
        out, self.pending = self.pending, []
        return out

    def summary(self) -> str | None:
        """One line about the client sides that ran without an alternate path (None when
        every managed connection was armed at once)."""
        clients = {k: c for k, c in self.conns.items() if not c["server"] and c["peer"]}
        # a connection closed within SHORT_S of its start had no time to be armed
        never = [k for k, c in clients.items() if c["armed_at"] is None
                 and c.get("closed_at", float("inf")) - c["seen"] > SHORT_S]
        late = [k for k, c in clients.items() if c["armed_at"] is not None
                and self.unprotected_at_start]
        parts = []
        if never:
            parts.append(f"{len(never)} connection(s) never armed (no alternate path: "
                         + ", ".join(f"{t} {n}->{clients[(n, t)]['peer']}" for n, t in never)
                         + ")")
        if late:
            last = max(clients[k]["armed_at"] for k in late)
            parts.append(f"{len(late)} connection(s) ran without an alternate path until "
                         f"armed, the last at +{last - self.t0:.1f} s")
        return "pathmig: " + "; ".join(parts) if parts else None


class LogTail:
    """Reads the complete new lines of the agents' JSON-lines logs on each poll()."""

    def __init__(self, paths: list[Path]) -> None:
        self.offsets = {p: 0 for p in paths}

    def poll(self) -> list[dict[str, Any]]:
        out = []
        for p, off in self.offsets.items():
            try:
                # O_NONBLOCK and a regular file only: a FIFO in a log's place never blocks
                fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                os.lseek(fd, off, os.SEEK_SET)
                chunks = []
                while b := os.read(fd, 1 << 20):
                    chunks.append(b)
                data = b"".join(chunks)
            except OSError:
                continue
            finally:
                os.close(fd)
            end = data.rfind(b"\n") + 1
            self.offsets[p] = off + end
            for ln in data[:end].splitlines():
                try:
                    out.append(json.loads(ln))
                except ValueError:
                    continue
        out.sort(key=lambda e: e.get("time", 0.0))
        return out


def finish(watch: ArmWatch, tail: LogTail) -> list[str]:
    """The job's last lines once its agents have stopped: the notices of the events the
    watcher thread had not read yet (an arming logged in the job's last moments, or by an
    agent that a busy CPU kept from its log until it stopped), then the summary."""
    for e in tail.poll():
        watch.feed(e)
    note = watch.summary()
    return watch.lines() + ([note] if note else [])


def run_watch(watch: ArmWatch, tail: LogTail, stop: threading.Event,
              say: Callable[[str], None], period: float = 0.25) -> None:
    """The watcher thread's loop: poll the logs, say each notice, until `stop` is set
    (then one last poll)."""
    while True:
        done = stop.wait(period)
        for e in tail.poll():
            watch.feed(e)
        for ln in watch.lines():
            say(ln)
        if done:
            return
