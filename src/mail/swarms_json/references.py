"""Reference strings in swarm definitions: ``python::module:attr`` and ``url::https://...``.

``python::pkg.mod:obj.attr`` imports ``pkg.mod`` and returns ``obj.attr``; ``url::URL``
fetches ``URL`` and returns its JSON re-encoded as a string. Both can be limited by a
:class:`ReferencePolicy`: swarms that arrive over HTTP get a policy that allows no
fetches and only objects that configured packages define themselves (see
:func:`read_untrusted_python_string`), so a request cannot import or fetch anything else.

v1.3.6 imported these functions from :mod:`mail.utils.parsing`, which re-exports them.
"""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from mail.core.message import parse_agent_address
from mail.errors import InvalidMessageError, SwarmDefinitionError

if TYPE_CHECKING:
    from mail.net import AddressPolicy

__all__ = [
    "DEFAULT_POLICY",
    "PYTHON_PREFIX",
    "SWARM_MODULES",
    "URL_PREFIX",
    "ReferencePolicy",
    "read_python_string",
    "read_untrusted_python_string",
    "read_url_string",
    "resolve_prefixed_string_references",
    "target_address_is_interswarm",
]

PYTHON_PREFIX = "python::"
URL_PREFIX = "url::"


#: The packages whose modules an untrusted ``python::`` reference may import: those made to
#: be named in swarm definitions (agent factories, the examples, the standard library of
#: actions), not the server, the CLI or the store, whose functions do things when called.
SWARM_MODULES = ("mail.examples", "mail.factories", "mail.stdlib")
#: What an object named by an untrusted reference must be defined in (its ``__module__``,
#: or its type's): our own package, so that an allowed module's imports stay out of reach.
OWN_PACKAGE = ("mail",)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferencePolicy:
    """What reference strings may do.

    ``python_prefixes``: ``None`` for a trusted source (any module, any attribute chain);
    otherwise the packages whose own objects an untrusted ``python::`` reference may name
    (:func:`read_untrusted_python_string`).
    ``allow_url``: whether ``url::`` may fetch at all; ``allow_http``: plain ``http://``
    too (default https only); ``timeout`` in seconds and ``max_bytes`` bound a fetch;
    ``addresses`` decides which addresses a fetch may connect to, redirects included
    (default :class:`~mail.net.AddressPolicy()`: no link-local, metadata, unspecified or
    multicast address). ``allow_mcp_commands``: whether the swarm may declare MCP servers
    run as local programs (``mcp_servers`` items with a ``command``).
    """

    python_prefixes: tuple[str, ...] | None = None
    allow_url: bool = True
    allow_http: bool = False
    timeout: float = 10.0
    max_bytes: int = 1_048_576
    addresses: AddressPolicy | None = None
    allow_mcp_commands: bool = True

    @classmethod
    def restricted(cls, python_prefixes: tuple[str, ...] = SWARM_MODULES) -> ReferencePolicy:
        """The policy for swarm definitions received over HTTP."""
        return cls(python_prefixes=python_prefixes, allow_url=False, allow_mcp_commands=False)


#: The policy of a trusted source: any module, ``url::`` over https.
DEFAULT_POLICY = ReferencePolicy()


def read_python_string(string: str, policy: ReferencePolicy = DEFAULT_POLICY) -> Any:
    """Import ``module:attr`` (``python::`` prefix optional) and return the attribute.

    ``attr`` may be a dotted chain (``obj.attr.more``), followed piece by piece. When
    ``policy.python_prefixes`` is set the reference comes from an untrusted source and
    :func:`read_untrusted_python_string` decides instead. Raises
    :class:`SwarmDefinitionError` when the string is malformed, the reference is not
    allowed by ``policy``, the module cannot be imported, or lacks the attribute.
    """
    if policy.python_prefixes is not None:
        return read_untrusted_python_string(string, policy.python_prefixes)
    module_name, attr_path = _split_reference(string)
    value = _import_module(string, module_name)
    for part in attr_path.split("."):
        value = _attribute(string, value, part, module_name, attr_path)
    return value


def read_untrusted_python_string(string: str, python_prefixes: tuple[str, ...]) -> Any:
    """Resolve a ``python::`` reference from an untrusted source (a swarm sent over HTTP).

    The module must lie in one of ``python_prefixes`` (:data:`SWARM_MODULES` for swarms
    loaded over HTTP) and the reference must name what that module offers: one name, or
    ``Class.attr`` where ``Class`` is a class of ours; no ``__dunder__`` names. The object
    found must be plain data (str, numbers, lists and dicts of them) or be defined in
    ``mail`` (its ``__module__``, for an instance its type's): never a module, a builtin,
    or something of another package. So ``python::mail.factories.base:os.system`` is
    refused although ``mail.factories.base`` is allowed.
    Raises :class:`SwarmDefinitionError` saying which rule the reference breaks.
    """
    module_name, attr_path = _split_reference(string)
    if not _in_packages(module_name, python_prefixes):
        _refuse(string, f"modules must start with {', '.join(python_prefixes)}")
    parts = attr_path.split(".")
    if len(parts) > 2:  # noqa: PLR2004  # a name or Class.attr
        _refuse(string, "name one object of the module or Class.attr, not a longer chain")
    if any(part.startswith("__") for part in parts):
        _refuse(string, "names starting with '__' reach interpreter internals")
    value = _import_module(string, module_name)
    for depth, part in enumerate(parts):
        if depth and not inspect.isclass(value):
            _refuse(string, f"'{parts[0]}' is not a class, so it has no attributes to name")
        value = _attribute(string, value, part, module_name, attr_path)
        why = _foreign_object(value, OWN_PACKAGE)
        if why:
            _refuse(string, f"'{'.'.join(parts[: depth + 1])}' {why}")
    return value


def _split_reference(string: str) -> tuple[str, str]:
    target = string.removeprefix(PYTHON_PREFIX)
    module_name, colon, attr_path = target.partition(":")
    if not colon or not module_name or not attr_path:
        raise SwarmDefinitionError(
            f"reference {string!r} is not of the form 'python::module:attribute'"
        )
    return module_name, attr_path


def _in_packages(module_name: str, prefixes: tuple[str, ...]) -> bool:
    return any(
        module_name == p.rstrip(".") or module_name.startswith(p if p.endswith(".") else p + ".")
        for p in prefixes
    )


def _refuse(string: str, why: str) -> NoReturn:
    raise SwarmDefinitionError(f"reference {string!r} is not allowed here: {why}")


def _import_module(string: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise SwarmDefinitionError(
            f"reference {string!r}: cannot import module '{module_name}': {e}"
        ) from e


def _attribute(string: str, value: Any, part: str, module_name: str, attr_path: str) -> Any:
    try:
        return getattr(value, part)
    except AttributeError:
        raise SwarmDefinitionError(
            f"reference {string!r}: module '{module_name}' has no attribute '{attr_path}'"
        ) from None


_PLAIN_SCALARS = (str, bytes, int, float, bool, type(None))


def _is_plain_data(value: Any) -> bool:
    if type(value) in _PLAIN_SCALARS:
        return True
    if type(value) in (list, tuple):
        return all(_is_plain_data(v) for v in value)
    if type(value) is dict:
        return all(_is_plain_data(k) and _is_plain_data(v) for k, v in value.items())
    return False


def _foreign_object(value: Any, prefixes: tuple[str, ...]) -> str | None:
    """Why ``value`` may not be named by an untrusted reference (``None``: it may)."""
    if _is_plain_data(value):
        return None
    if inspect.ismodule(value):
        return "is a module"
    if inspect.isclass(value) or inspect.isroutine(value):
        defined_in = getattr(value, "__module__", None)
    else:
        defined_in = type(value).__module__
    if inspect.isbuiltin(value) or inspect.ismethoddescriptor(value):
        return "is a builtin"
    if defined_in in (None, "builtins"):
        return "is a builtin"
    if not _in_packages(defined_in, prefixes):
        return f"is defined in '{defined_in}', not in {', '.join(prefixes)}"
    return None


def read_url_string(
    string: str,
    policy: ReferencePolicy | bool = DEFAULT_POLICY,
    raise_on_error: bool = True,
) -> str:
    """Fetch ``url::URL`` and return the JSON document it serves, re-encoded as a string.

    v1.3.6's ``read_url_string(string, raise_on_error)`` is accepted too (a bool in place
    of ``policy`` is ``raise_on_error``): with ``raise_on_error=False`` a failure returns
    ``string`` unchanged instead of raising.

    The scheme and the address are checked on the URL and on every redirect (https only
    unless ``policy.allow_http``; addresses by ``policy.addresses``), and ``policy.timeout`` bounds the whole fetch, not each read
    (see :mod:`mail.swarms_json._fetch`). Raises :class:`SwarmDefinitionError` when
    fetching is not allowed, a scheme or address is not allowed (naming the rule), the
    fetch fails or times out, the
    body exceeds ``policy.max_bytes``, or the body is not JSON. Nothing is silently kept.
    """
    if isinstance(policy, bool):
        raise_on_error = policy
    try:
        return _read_url_string(string, DEFAULT_POLICY if isinstance(policy, bool) else policy)
    except SwarmDefinitionError:
        if raise_on_error:
            raise
        return string


def _read_url_string(string: str, policy: ReferencePolicy) -> str:
    from mail.net import AddressPolicy  # noqa: PLC0415  # only url:: needs it
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
            policy=policy.addresses or AddressPolicy(),  # the default rules
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
