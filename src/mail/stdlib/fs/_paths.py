"""Confining the file actions to ``[stdlib.fs] root`` (private)."""

from __future__ import annotations

from pathlib import Path

from mail.stdlib._kit import ActionFailed

__all__ = ["confined"]


def confined(root: str, given: str) -> Path:
    """The real path ``given`` names under ``root`` (created if missing), every symlink
    followed; raises :class:`ActionFailed` when it is outside the root. Blocking."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    real_root = base.resolve(strict=True)
    candidate = Path(given)
    if candidate.is_absolute():
        candidate = _inside(candidate, (base, real_root), given)
    # resolve() follows every symlink of every existing component, and '..'
    target = (real_root / candidate).resolve(strict=False)
    if target != real_root and real_root not in target.parents:
        raise _outside(given)
    return target


def _inside(path: Path, roots: tuple[Path, ...], given: str) -> Path:
    for root in roots:
        try:
            return path.relative_to(root)
        except ValueError:
            continue
    raise _outside(given)


def _outside(given: str) -> ActionFailed:
    return ActionFailed(
        f"{given} is outside the files directory; paths are relative to [stdlib.fs] root"
    )
