"""Implementation and protocol versions (read from code, never from the working directory)."""

from __future__ import annotations

__all__ = ["__version__", "PROTOCOL_VERSION"]

#: Version of this implementation (the ``mail-swarms`` distribution).
__version__ = "1.3.6"
#: MAIL protocol version spoken on the wire.
PROTOCOL_VERSION = "1.3"
