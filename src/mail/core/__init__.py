"""The MAIL core: protocol types, tools, tasks, events and the runtime.

``mail.core`` imports nothing of ours but ``mail.errors`` and no I/O library; it reaches
agents, storage and remote swarms through small interfaces passed to its constructors.
"""

from __future__ import annotations

__all__: list[str] = []
