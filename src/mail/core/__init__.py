"""The MAIL core: protocol types, tools, tasks, events and the runtime.

``mail.core`` imports nothing of ours but ``mail.errors`` and ``mail._limits`` (what outside
input may look like) and no I/O library; it reaches
agents, storage and remote swarms through small interfaces passed to its constructors.
"""

from __future__ import annotations

__all__: list[str] = []
