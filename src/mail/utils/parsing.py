"""Reference strings in swarm definitions: ``python::module:attr`` and ``url::https://...``.

``python::pkg.mod:obj.attr`` imports ``pkg.mod`` and returns ``obj.attr``; ``url::URL``
fetches ``URL`` and returns its JSON re-encoded as a string. Both can be limited by a
:class:`ReferencePolicy`: swarms that arrive over HTTP get a policy that only allows
configured module prefixes and no fetches, so a request cannot import or fetch anything.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mail.core.message import parse_agent_address
from mail.errors import InvalidMessageError, SwarmDefinitionError

if TYPE_CHECKING:
    from mail.net import AddressPolicy

__all__ = [
    "PYTHON_PREFIX",
    "URL_PREFIX",
    "ReferencePolicy",
    "read_python_string",
    "read_url_string",
    "resolve_prefixed_string_references",
    "target_address_is_interswarm",
]

PYTHON_PREFIX = "python::"
URL_PREFIX = "url::"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferencePolicy:
    """What reference strings may do.

    ``python_prefixes``: module prefixes ``python::`` may import (``None``: any module).
    ``allow_url``: whether ``url::`` may fetch at all; ``allow_http``: plain ``http://``
    too (default https only); ``timeout`` in seconds and ``max_bytes`` bound a fetch;
    ``addresses`` decides which addresses a fetch may connect to, redirects included
    (default :class:`~mail.net.AddressPolicy()`: no link-local, metadata, unspecified or
    multicast address).
    """

    python_prefixes: tuple[str, ...] | None = None
    allow_url: bool = True
    allow_http: bool = False
    timeout: float = 10.0
    max_bytes: int = 1_048_576
    addresses: AddressPolicy | None = None

    @classmethod
    def restricted(cls, python_prefixes: tuple[str, ...] = ("mail.",)) -> ReferencePolicy:
        """The policy for swarm definitions received over HTTP."""
        return cls(python_prefixes=python_prefixes, allow_url=False)


DEFAULT_POLICY = ReferencePolicy()


def read_python_string(string: str, policy: ReferencePolicy = DEFAULT_POLICY) -> Any:
    """Import ``module:attr`` (``python::`` prefix optional) and return the attribute.

    Raises :class:`SwarmDefinitionError` when the string is malformed, the module is not
    allowed by ``policy``, cannot be imported, or lacks the attribute.
    """
    target = string.removeprefix(PYTHON_PREFIX)
    module_name, colon, attr_path = target.partition(":")
    if not colon or not module_name or not attr_path:
        raise SwarmDefinitionError(
            f"reference {string!r} is not of the form 'python::module:attribute'"
        )
    allowed = policy.python_prefixes
    if allowed is not None and not any(
        module_name == p.rstrip(".") or module_name.startswith(p if p.endswith(".") else p + ".")
        for p in allowed
    ):
        raise SwarmDefinitionError(
            f"reference {string!r} is not allowed here: modules must start with {', '.join(allowed)}"
        )
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise SwarmDefinitionError(
            f"reference {string!r}: cannot import module '{module_name}': {e}"
        ) from e
    for part in attr_path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SwarmDefinitionError(
                f"reference {string!r}: module '{module_name}' has no attribute '{attr_path}'"
            ) from None
    return value


def read_url_string(string: str, policy: ReferencePolicy = DEFAULT_POLICY) -> str:
    """Fetch ``url::URL`` and return the JSON document it serves, re-encoded as a string.

    The scheme and the address are checked on the URL and on every redirect (https only
    unless ``policy.allow_http``; addresses by ``policy.addresses``), and ``policy.timeout`` bounds the whole fetch, not each read
    (see :mod:`mail.swarms_json._fetch`). Raises :class:`SwarmDefinitionError` when
    fetching is not allowed, a scheme or address is not allowed (naming the rule), the
    fetch fails or times out, the
    body exceeds ``policy.max_bytes``, or the body is not JSON. Nothing is silently kept.
    """
    from mail.net._guard import DEFAULT_POLICY  # noqa: PLC0415  # only url:: needs it
    from mail.swarms_json._fetch import FetchError, fetch  # noqa: PLC0415

    url = string.removeprefix(URL_PREFIX)
    if not policy.allow_url:
        raise SwarmDefinitionError(f"reference {string!r}: url:: references are not allowed here")
    try:
        body = fetch(
            url,
            allow_http=policy.allow_http,
            timeout=policy.timeout,
            max_bytes=policy.max_bytes,
            policy=policy.addresses or DEFAULT_POLICY,
        )
    except FetchError as e:
        raise SwarmDefinitionError(f"reference {string!r}: {e}") from e
    try:
        return json.dumps(json.loads(body))
    except ValueError as e:
        raise SwarmDefinitionError(f"reference {string!r}: response is not JSON: {e}") from e


def resolve_prefixed_string_references(value: Any, policy: ReferencePolicy = DEFAULT_POLICY) -> Any:
    """Return ``value`` with every ``python::``/``url::`` string (in nested dicts and lists)
    replaced by what it refers to. Raises :class:`SwarmDefinitionError` on a bad reference."""
    if isinstance(value, str):
        if value.startswith(PYTHON_PREFIX):
            return read_python_string(value, policy)
        if value.startswith(URL_PREFIX):
            return read_url_string(value, policy)
        return value
    if isinstance(value, dict):
        return {k: resolve_prefixed_string_references(v, policy) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_prefixed_string_references(v, policy) for v in value]
    return value


def target_address_is_interswarm(address: str) -> bool:
    """True when ``address`` names an agent of another swarm (``agent@swarm``)."""
    try:
        return parse_agent_address(address)[1] is not None
    except InvalidMessageError:
        return False
