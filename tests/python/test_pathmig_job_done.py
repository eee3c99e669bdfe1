"""Agents stopped one after another must not judge each other dead: every agent is told
the job is done (no more verdicts) before the first is stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mpilab.errors import MpilabError
from mpilab.pathmig import agents


def test_every_agent_hears_done_before_the_first_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str]] = []

    def request(spec: Any, node: str, line: str, timeout: float = 10.0) -> dict[str, Any]:
        sent.append((node, line))
        if node == "s2n0":  # an agent that does not answer is left to stop()
            raise MpilabError("pathmig: agent on s2n0: timed out")
        return {"ok": True}

    monkeypatch.setattr(agents, "running", lambda spec: {"s0n0": 11, "s1n0": 12, "s2n0": 13})
    monkeypatch.setattr(agents, "request", request)
    monkeypatch.setattr(agents.pidfile, "stop", lambda *a, **k: None)
    monkeypatch.setattr(agents, "reap", lambda pids, wait=60.0: None)
    monkeypatch.setattr(agents, "agent_dir", lambda spec: Path("/nonexistent"))
    assert agents.stop(object()) == ["s0n0", "s1n0", "s2n0"]
    first_stop = [line for _, line in sent].index("stop")
    assert sorted(sent[:first_stop]) == [("s0n0", "done"), ("s1n0", "done"), ("s2n0", "done")]
    assert sorted(sent[first_stop:]) == [("s0n0", "stop"), ("s1n0", "stop"), ("s2n0", "stop")]
    sent.clear()
    assert agents.job_done(object()) == ["s0n0", "s1n0"]
    assert sent == [("s0n0", "done"), ("s1n0", "done"), ("s2n0", "done")]
