"""Client settings: the ``[client]`` table (read by ``mail client`` and ``MAILClient``)."""

from __future__ import annotations

import logging

from pydantic import ConfigDict, Field

from mail.config._base import ConfigModel

__all__ = ["ClientConfig"]

#: The configuration logger (``mail.config``); v1.3.6 had one per config module.
logger = logging.getLogger("mail.config")


class ClientConfig(ConfigModel):
    """``[client]``: request timeout (seconds), verbose logging, default server and key.

    ``api_key`` is kept out of ``repr`` and validation errors. Constructing the model
    directly gives the literal defaults; ``load_config().client`` gives the file's values.
    Bad values raise ``pydantic.ValidationError``.
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    timeout: float = Field(default=3600.0, gt=0)
    verbose: bool = False
    url: str | None = Field(default=None, min_length=1)
    api_key: str | None = Field(default=None, min_length=1, repr=False)
