"""Client settings: the ``[client]`` table (read by ``mail client`` and ``MAILClient``)."""

from __future__ import annotations

import logging

from pydantic import ConfigDict, Field

from mail.config._base import ConfigModel

__all__ = ["ClientConfig"]

#: The configuration logger (``mail.config``); v1.3.6 had one per config module.
logger = logging.getLogger("mail.config")


class ClientConfig(ConfigModel):
    """``[client]``: request timeout (seconds), verbose logging, default server and key,
    and how ``POST /message`` is retried: ``retries`` more attempts after a lost connection
    or a 502/503/504, the first ``retry_backoff`` seconds later (doubled for each next one;
    a ``Retry-After`` header wins).

    ``api_key`` is kept out of ``repr`` and validation errors. Constructing the model
    directly gives the literal defaults; ``load_config().client`` gives the file's values.
    Bad values raise ``pydantic.ValidationError``.
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    timeout: float = Field(default=3600.0, gt=0)
    verbose: bool = False
    url: str | None = Field(default=None, min_length=1)
    api_key: str | None = Field(default=None, min_length=1, repr=False)
    retries: int = Field(default=2, ge=0, le=100)
    retry_backoff: float = Field(default=0.5, ge=0, le=600, allow_inf_nan=False)
