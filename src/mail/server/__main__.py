"""``python -m mail.server``: the same as ``mail server``."""

from __future__ import annotations

import sys

from mail.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["server", *sys.argv[1:]]))
