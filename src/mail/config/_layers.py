"""Merging configuration layers: leaf values by dotted key, each with its origin."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import AliasChoices, BaseModel, ValidationError

from mail.config._backends import AuthConfig, DatabaseConfig
from mail.config.client import ClientConfig
from mail.config.server import ServerConfig
from mail.config.stdlib import StdlibConfig
from mail.errors import ConfigurationError

Key = tuple[str, ...]

_SECTIONS: Mapping[str, type[BaseModel]] = MappingProxyType(
    {
        "server": ServerConfig,
        "client": ClientConfig,
        "auth": AuthConfig,
        "database": DatabaseConfig,
        "stdlib": StdlibConfig,
    }
)

_SECRET_KEYS = frozenset({"client.api_key", "database.url", "server.cluster.redis_url"})
_MAX_SHOWN = 60  # characters of a bad value quoted in an error


@dataclass(slots=True)
class Merged:
    """Leaf values by key, with where each came from (a file, a variable, overrides)."""

    file_origin: str | None
    values: dict[Key, Any] = field(default_factory=dict)
    origins: dict[Key, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def set(self, key: Key, value: Any, origin: str) -> None:
        """Set one leaf; a later layer replaces an earlier one."""
        self.values[key] = value
        self.origins[key] = origin

    def nested(self) -> dict[str, Any]:
        """The leaves as nested tables, ready for ``MAILConfig.model_validate``."""
        raw: dict[str, Any] = {}
        for key, value in self.values.items():
            node = raw
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        return raw

    def origin_of(self, key: Key) -> str:
        """Where ``key`` (or the nearest enclosing or enclosed key) was set."""
        for n in range(len(key), 0, -1):
            if key[:n] in self.origins:
                return self.origins[key[:n]]
        under = sorted({o for k, o in self.origins.items() if k[: len(key)] == key})
        return ", ".join(under) or self.file_origin or "configuration"


def children(model: type[BaseModel] | None) -> dict[str, tuple[str, type[BaseModel] | None]]:
    """Accepted key -> (field name, nested model or None); ``None`` is the top level."""
    if model is None:
        return {name: (name, sub) for name, sub in _SECTIONS.items()}
    out: dict[str, tuple[str, type[BaseModel] | None]] = {}
    for name, info in model.model_fields.items():
        ann = info.annotation
        sub = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        aliases = info.validation_alias
        names = (
            [c for c in aliases.choices if isinstance(c, str)]
            if isinstance(aliases, AliasChoices)
            else []
        )
        for accepted in {name, *names}:
            out[accepted] = (name, sub)
    return out


def leaves(
    table: Mapping[str, Any],
    label: str,
    on_unknown: Callable[[str], None],
    model: type[BaseModel] | None = None,
    prefix: Key = (),
) -> Iterator[tuple[Key, Any]]:
    """The known leaf values of ``table`` by canonical key; unknown keys go to ``on_unknown``."""
    accepted = children(model)
    seen: dict[str, str] = {}
    for key, value in table.items():
        dotted = ".".join((*prefix, key))
        if key not in accepted:
            on_unknown(dotted)
            continue
        name, sub = accepted[key]
        if name in seen:
            raise ConfigurationError(
                f"{label}: '{seen[name]}' and '{dotted}' set the same key; keep one"
            )
        seen[name] = dotted
        if value is None:
            continue  # only overrides can hold None: "flag not given"
        if sub is None:
            yield (*prefix, name), value
        elif isinstance(value, Mapping):
            yield from leaves(value, label, on_unknown, sub, (*prefix, name))
        else:
            raise ConfigurationError(
                f"{label}: '{dotted}' must be a table, not {type(value).__name__}"
            )


def describe(error: ValidationError, merged: Merged) -> str:
    """One line per error: origin, dotted key, what was expected and (unless secret) the value."""
    lines = []
    for err in error.errors(include_url=False):
        key = tuple(str(part) for part in err["loc"])
        dotted = ".".join(key)
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        got = ""
        if dotted not in _SECRET_KEYS and not isinstance(value, Mapping):
            shown = repr(value)
            if len(shown) > _MAX_SHOWN:
                shown = shown[: _MAX_SHOWN - 3] + "..."
            got = f" (got {type(value).__name__} {shown})"
        lines.append(f"{merged.origin_of(key)}: invalid value for '{dotted}': {message}{got}")
    return "\n".join(lines)
