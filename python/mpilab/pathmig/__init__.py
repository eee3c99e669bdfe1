"""Path migration over Multipath TCP: agents, commands, fault injection (docs/pathmig.md)."""
