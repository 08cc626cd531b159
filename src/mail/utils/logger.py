"""v1.3.6's ``mail.utils.logger``.

Differs from v1.3.6 on purpose: ``init_logger`` configures the ``mail`` logger only when
called (a library configures no handlers at import), with a plain stderr handler.
"""

from __future__ import annotations

import logging

__all__ = ["get_loggers", "init_logger"]


def get_loggers() -> list[str]:
    """Names of the ``mail`` loggers that exist so far (``mail`` and ``mail.*``)."""
    names = logging.root.manager.loggerDict
    return sorted(n for n in names if n == "mail" or n.startswith("mail."))


def init_logger() -> None:
    """Send the ``mail`` loggers' INFO and above to stderr (once; later calls do nothing)."""
    logger = logging.getLogger("mail")
    if any(getattr(h, "_mail_v136", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._mail_v136 = True  # type: ignore[attr-defined]  # marks our handler for idempotence
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
