"""``python -m mail.cli``: the same as ``mail``."""

from __future__ import annotations

from mail.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
