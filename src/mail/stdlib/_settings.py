"""The process's stdlib settings (``[stdlib]`` of ``mail.toml``), for actions that are
plain ``async def f(args)`` functions and cannot be handed a configuration.

``mail server`` calls :func:`configure` with its loaded configuration when it starts;
tests and embedding programs call it with their own :class:`~mail.config.StdlibConfig`.
When nothing was configured, :func:`current` loads the settings once with
:func:`mail.config.load_config` (the one configuration reader) and keeps them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mail.config import StdlibConfig, StdlibHTTPConfig, load_config
from mail.net import AddressPolicy

__all__ = ["SECTION", "configure", "current", "http_policy", "policy"]

#: Where the outbound guard's settings live, for messages.
SECTION = "[stdlib.http]"


@dataclass(slots=True)
class _State:
    configured: StdlibConfig | None = None
    loaded: StdlibConfig | None = None


_STATE = _State()
_LOCK = threading.Lock()


def configure(config: StdlibConfig | None) -> StdlibConfig | None:
    """Use ``config`` as the process's stdlib settings from now on; ``None`` goes back to
    the settings of ``mail.toml``. Returns the previously configured settings (``None``
    if there were none), so a caller can restore them."""
    with _LOCK:
        previous, _STATE.configured = _STATE.configured, config
    return previous


def current() -> StdlibConfig:
    """The settings given to :func:`configure`, else those of ``mail.toml`` (read once).

    Raises:
        ConfigurationError: nothing was configured and ``mail.toml`` or the environment
            is invalid.
    """
    with _LOCK:
        if _STATE.configured is not None:
            return _STATE.configured
        if _STATE.loaded is None:
            _STATE.loaded = load_config().stdlib
        return _STATE.loaded


def policy(settings: StdlibHTTPConfig) -> AddressPolicy:
    """The :class:`AddressPolicy` of ``[stdlib.http]`` settings."""
    return AddressPolicy(
        allow_networks=settings.allow_networks,
        deny_networks=settings.deny_networks,
        allow_hosts=settings.allow_hosts,
        deny_hosts=settings.deny_hosts,
        allow_loopback=settings.allow_loopback,
        allow_private=settings.allow_private,
        where=f"{SECTION} in mail.toml",
    )


def http_policy() -> AddressPolicy:
    """The outbound guard of the current settings (:func:`current`)."""
    return policy(current().http)
