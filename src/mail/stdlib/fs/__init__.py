"""File actions confined to ``[stdlib.fs] root``; see :mod:`mail.stdlib.fs.actions`."""

from __future__ import annotations

from mail.stdlib.fs.actions import (
    create_directory,
    delete_file,
    read_directory,
    read_file,
    write_file,
)

__all__ = ["create_directory", "delete_file", "read_directory", "read_file", "write_file"]
