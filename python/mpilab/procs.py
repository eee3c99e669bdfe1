"""Ending a child process this package started: a signal, a grace period, then SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def end(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace: float = 10.0,
        group: bool = False) -> None:
    """Send sig to proc (to its process group when `group`: a launcher started in a session
    of its own, so that the signal reaches its ranks), wait up to grace seconds, then
    SIGKILL and reap. Nothing when it has already ended."""
    if proc.poll() is not None:
        return

    def send(s: int) -> None:
        try:
            if group:
                os.killpg(proc.pid, s)
            else:
                proc.send_signal(s)
        except ProcessLookupError:
            pass

    send(sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
