"""mpilab.testbed.tcpping: the TCP ping-pong of the testbed's second truth, on loopback."""

from __future__ import annotations

import socket
import threading

from mpilab.testbed import tcpping


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ping_pong_round_trips_on_loopback() -> None:
    """20 round trips, each a positive time, every message answered in full; the server
    ends after its count."""
    port = _free_port()
    t = threading.Thread(target=tcpping.serve, args=(port, 20, 30.0, "127.0.0.1"))
    t.start()
    rtts = tcpping.ping("127.0.0.1", port, 20, timeout=30.0)
    t.join(30)
    assert not t.is_alive()
    assert len(rtts) == 20 and all(0 < r < 30 for r in rtts)


def test_bad_usage_and_no_server() -> None:
    """Usage errors exit 2, a bad port 1; no server: the connection is retried for a while,
    then the error is raised (main turns it into one line and exit status 1)."""
    import pytest

    assert tcpping.main(["serve"]) == 2
    assert tcpping.main(["ping", "127.0.0.1", "x", "3"]) == 1
    with pytest.raises(OSError):
        tcpping.ping("127.0.0.1", _free_port(), 3, timeout=5.0, connect_for=0.3)
