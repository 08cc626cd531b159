"""``mail doctor``: check a deployment's configuration and say what to fix.

Each check returns one :class:`Check` (or several): a name, a status (``"ok"``, ``"warn"``
or ``"fail"``), a message and, unless all is well, how to fix it. :func:`run_checks` runs
them all in order. The environment is a parameter (``env``) everywhere: only the command
line passes ``os.environ``.

Checks: the config file found, config warnings (unknown keys), the swarm loads from its
source, LLM agents have a proxy or provider key, agents that name ``agent@peer`` have
interswarm enabled, the auth mode's requirements, the task store is reachable, the
registry's peers answer, and in cluster mode Redis answers and the replicas seen.
"""

from __future__ import annotations

import asyncio
import os
import stat
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from mail.config import AuthConfig, DatabaseConfig, MAILConfig

__all__ = [
    "Check",
    "Status",
    "run_checks",
    "render",
    "check_interswarm_targets",
    "check_llm_keys",
    "missing_llm_settings",
    "PROVIDER_KEYS",
    "HTTP_TIMEOUT",
]

Status = Literal["ok", "warn", "fail"]

#: Seconds to wait for an auth endpoint, a peer or the task store.
HTTP_TIMEOUT = 3.0
_STORE_TIMEOUT = 5.0

#: The API-key environment variable of each LiteLLM provider prefix (``openai/gpt-5``).
PROVIDER_KEYS: Mapping[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "cohere": "COHERE_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "azure": "AZURE_API_KEY",
}
_PROXY_VAR = "LITELLM_PROXY_API_BASE"
_SQLITE_FIX = "make the directory of [database] sqlite_path (MAIL_DATA_DIR) writable"
_SYMBOLS: Mapping[Status, str] = {"ok": "✓", "warn": "!", "fail": "✗"}


@dataclass(frozen=True)
class Check:
    """One result: ``name``, ``status``, ``message`` and ``fix`` (empty when nothing to do)."""

    name: str
    status: Status
    message: str
    fix: str = ""


def render(checks: list[Check]) -> str:
    """One ``✓``/``!``/``✗ name: message`` line per check, then an indented ``fix:`` line."""
    lines: list[str] = []
    for check in checks:
        lines.append(f"{_SYMBOLS[check.status]} {check.name}: {check.message}")
        if check.fix:
            lines.append(f"    fix: {check.fix}")
    return "\n".join(lines)


def run_checks(
    config_path: str | None,
    env: Mapping[str, str],
    *,
    search: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> list[Check]:
    """Every check for the configuration ``config_path``, in order.

    ``config_path`` ``None`` means the usual lookup: ``MAIL_CONFIG_PATH`` in ``env``, then
    (when ``search``) ``mail.toml`` in the working directory or above the package. ``env``
    is the environment the checks read (the overrides of :data:`mail.config.ENV_OVERRIDES`,
    LLM keys, registry tokens); ``os.environ`` is never read here. ``overrides`` applies on
    top, as ``mail server``'s flags do (``{"server": {"swarm": {"name": ...}}}``). A
    configuration that does not load gives one failed ``config`` check; nothing is raised.
    """
    from mail.cli._doctor_a2a import check_a2a_agents  # noqa: PLC0415  # the SDK, on use
    from mail.cli._doctor_cluster import check_cluster  # noqa: PLC0415  # redis, on use
    from mail.cli._doctor_mcp import check_mcp_servers  # noqa: PLC0415  # the SDK, on use
    from mail.config import load_config  # noqa: PLC0415
    from mail.errors import ConfigurationError  # noqa: PLC0415

    try:
        config = load_config(config_path, env=env, search=search, overrides=overrides)
    except ConfigurationError as e:
        return [
            Check(
                "config",
                "fail",
                str(e),
                "correct the file or variable named above (see docs/configuration.md)",
            )
        ]
    checks = [check_config_file(config), check_config_warnings(config)]
    checks.append(check_swarm(config))
    checks.extend(check_llm_keys(config, env))
    checks.extend(check_interswarm_targets(config))
    checks.extend(Check(*finding) for finding in check_mcp_servers(config, env))
    checks.extend(Check(*finding) for finding in check_a2a_agents(config, _raw_a2a(config)))
    checks.append(check_auth(config.auth))
    checks.append(unmade_store(config.database) or asyncio.run(check_store(config.database)))
    checks.extend(check_registry(config, env))
    checks.extend(Check(*finding) for finding in check_cluster(config))
    return checks


def check_config_file(config: MAILConfig) -> Check:
    """Which mail.toml is used; a warning when none is (the defaults apply)."""
    if config.source_path is None:
        return Check(
            "config file",
            "warn",
            f"no mail.toml found; defaults in use (working directory {Path.cwd()})",
            "create mail.toml, pass -c PATH or set MAIL_CONFIG_PATH",
        )
    return Check("config file", "ok", f"using {config.source_path}")


def check_config_warnings(config: MAILConfig) -> Check:
    """Unknown keys and half-configured settings that load_config noted."""
    if not config.warnings:
        return Check("config keys", "ok", "no unknown or ignored keys")
    return Check(
        "config keys",
        "warn",
        "; ".join(config.warnings),
        "remove or correct the keys named above (see docs/configuration.md)",
    )


def check_swarm(config: MAILConfig) -> Check:
    """The configured swarm loads from its source (names, references, factories)."""
    from mail.api import MAILSwarmTemplate  # noqa: PLC0415
    from mail.errors import MAILError  # noqa: PLC0415

    swarm = config.server.swarm
    try:
        MAILSwarmTemplate.from_swarm_json_file(swarm.name, swarm.source).validate()
    except (MAILError, OSError, ValueError, ImportError) as e:
        return Check(
            "swarm",
            "fail",
            f"swarm {swarm.name!r} from {swarm.source} does not load: {e}",
            "set [server.swarm] name/source (SWARM_NAME, SWARM_SOURCE) to a swarm defined "
            "in that file, or correct its definition (docs/swarms-schema.json)",
        )
    return Check("swarm", "ok", f"{swarm.name!r} loads from {swarm.source}")


def _raw_swarm(config: MAILConfig) -> Mapping[str, Any] | None:
    from mail.errors import MAILError  # noqa: PLC0415
    from mail.swarms_json import find_swarm, load_swarms_json_file  # noqa: PLC0415

    swarm = config.server.swarm
    try:
        spec: Mapping[str, Any] = find_swarm(load_swarms_json_file(swarm.source), swarm.name)
    except (MAILError, OSError, ValueError):
        return None  # check_swarm reports it
    return spec


def _raw_a2a(config: MAILConfig) -> list[Any]:
    spec = _raw_swarm(config)
    entries = spec.get("a2a_agents", []) if spec is not None else []
    return entries if isinstance(entries, list) else []


def _raw_agents(config: MAILConfig) -> list[Mapping[str, Any]] | None:
    spec = _raw_swarm(config)
    if spec is None:
        return None
    agents = spec.get("agents", [])
    return [a for a in agents if isinstance(a, Mapping)]


def check_interswarm_targets(config: MAILConfig) -> list[Check]:
    """Agents that name ``agent@peer`` in ``comm_targets`` need ``enable_interswarm`` on
    themselves (what their tools say, the interswarm tools) and on the swarm (without it
    nothing leaves): a warning for each that lacks it."""
    spec = _raw_swarm(config)
    if spec is None:
        return []
    checks: list[Check] = []
    remote_agents = 0
    for agent in spec.get("agents", []):
        if not isinstance(agent, Mapping):
            continue
        remote = [str(t) for t in agent.get("comm_targets") or [] if "@" in str(t)]
        if not remote:
            continue
        remote_agents += 1
        name = str(agent.get("name", "?"))
        if not agent.get("enable_interswarm", False):
            checks.append(
                Check(
                    "interswarm",
                    "warn",
                    f"agent {name!r} names {', '.join(remote)} but has no enable_interswarm: "
                    "it is not told that it may message other swarms",
                    f'set "enable_interswarm": true on agent {name!r}, and list the reverse '
                    "address (this swarm's agent) in the peer agent's comm_targets "
                    "(docs/interswarm.md)",
                )
            )
    if remote_agents and not spec.get("enable_interswarm", False):
        checks.append(
            Check(
                "interswarm",
                "warn",
                f"agents of swarm {spec.get('name')!r} name agents of other swarms, but the "
                "swarm has no enable_interswarm",
                'set "enable_interswarm": true on the swarm (docs/interswarm.md)',
            )
        )
    if checks:
        return checks
    if remote_agents:
        return [Check("interswarm", "ok", f"{remote_agents} agent(s) may message other swarms")]
    return [Check("interswarm", "ok", "no agent names an agent of another swarm")]


def _is_llm_agent(agent: Mapping[str, Any]) -> bool:
    params = agent.get("agent_params") or {}
    factory = str(agent.get("factory", ""))
    litellm_factory = factory.startswith("python::mail.factories") and ":LiteLLM" in factory
    return litellm_factory or (isinstance(params, Mapping) and "llm" in params)


def check_llm_keys(config: MAILConfig, env: Mapping[str, str]) -> list[Check]:
    """LLM agents need ``LITELLM_PROXY_API_BASE`` (``use_proxy``, the default) or a key."""
    missing: dict[str, list[str]] = {}  # variable -> agents
    unknown: list[str] = []
    llm_agents = 0
    agents = _raw_agents(config)
    if agents is None:
        return [
            Check("llm keys", "warn", "not checked: the swarm does not load", "fix the swarm first")
        ]
    for agent in agents:
        if not _is_llm_agent(agent):
            continue
        llm_agents += 1
        params = agent.get("agent_params") or {}
        name = str(agent.get("name", "?"))
        if params.get("api_base"):
            continue
        if params.get("use_proxy", True):
            if not env.get(_PROXY_VAR):
                missing.setdefault(_PROXY_VAR, []).append(name)
            continue
        if params.get("api_key"):
            continue
        provider = str(params.get("llm", "")).split("/", 1)[0]
        variable = PROVIDER_KEYS.get(provider)
        if variable is None:
            unknown.append(f"{name} ({params.get('llm')!r})")
        elif not env.get(variable):
            missing.setdefault(variable, []).append(name)
    swarm = config.server.swarm.name
    if llm_agents == 0:
        return [Check("llm keys", "ok", f"swarm {swarm!r} has no LLM agents")]
    checks = [
        Check(
            "llm keys",
            "fail",
            f"{variable} is not set (needed by agent(s) {', '.join(agents)} of {swarm!r})",
            f"export {variable}=…"
            + (
                " (the LiteLLM proxy's URL), or set use_proxy = false with a provider key"
                if variable == _PROXY_VAR
                else " or give the agent an api_base"
            ),
        )
        for variable, agents in missing.items()
    ]
    if unknown:
        checks.append(
            Check(
                "llm keys",
                "warn",
                f"cannot tell which key agent(s) {', '.join(unknown)} need",
                "make sure the provider's API key variable is set (see LiteLLM's docs)",
            )
        )
    return checks or [Check("llm keys", "ok", f"{llm_agents} LLM agent(s) have a proxy or key")]


def missing_llm_settings(config: MAILConfig, env: Mapping[str, str]) -> str | None:
    """What ``mail server`` says before it listens when an LLM agent lacks its proxy URL or
    key (the failures of :func:`check_llm_keys`, on one line), else ``None``."""
    failed = [check.message for check in check_llm_keys(config, env) if check.status == "fail"]
    if not failed:
        return None
    return (
        f"{'; '.join(failed)}. Set it, or run `mail doctor` to see what to fix "
        "(--skip-llm-check starts anyway)"
    )


def check_auth(auth: AuthConfig) -> Check:
    """Embedded: the credentials file is private. Remote: both endpoints answer."""
    if auth.mode == "remote":
        return _check_remote_auth(auth)
    path = Path(auth.credentials_file)
    if not path.exists():
        return Check(
            "auth",
            "warn",
            f"embedded auth; {path} does not exist yet (created on first start)",
            "start `mail server` once, or check [auth] credentials_file",
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check(
            "auth",
            "fail",
            f"embedded auth; {path} has mode {mode:04o}: other users can read the API keys",
            f"chmod 600 {path}",
        )
    return Check("auth", "ok", f"embedded auth; {path} (mode {mode:04o})")


def _reachable(url: str) -> str | None:
    """``None`` when ``url`` gives any HTTP answer within the timeout, else why not."""
    request = urllib.request.Request(url, method="GET")  # noqa: S310  # http(s) only, checked
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT):  # noqa: S310
            return None
    except urllib.error.HTTPError:
        return None  # an HTTP answer: the service is there
    except (urllib.error.URLError, OSError, ValueError) as e:
        return str(getattr(e, "reason", e))


def _check_remote_auth(auth: AuthConfig) -> Check:
    ends = {"auth_endpoint": auth.auth_endpoint, "token_info_endpoint": auth.token_info_endpoint}
    unset = [key for key, url in ends.items() if not url]
    if unset:
        return Check(
            "auth",
            "fail",
            f"remote auth without {', '.join(unset)}",
            "set AUTH_ENDPOINT and TOKEN_INFO_ENDPOINT ([auth] auth_endpoint, token_info_endpoint)",
        )
    down = [f"{url} ({why})" for url in ends.values() if url and (why := _reachable(url))]
    if down:
        return Check(
            "auth",
            "fail",
            f"remote auth endpoint(s) unreachable: {', '.join(down)}",
            "start the auth service or correct AUTH_ENDPOINT / TOKEN_INFO_ENDPOINT",
        )
    return Check("auth", "ok", "remote auth; both endpoints answer")


def _where(database: DatabaseConfig) -> str:
    if database.backend != "postgres" or database.url is None:
        return database.sqlite_path
    parts = urlsplit(database.url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}"


def _scrub(text: str, database: DatabaseConfig) -> str:
    if database.url:
        password = urlsplit(database.url).password
        text = text.replace(database.url, _where(database))
        if password:
            text = text.replace(password, "***")
    return text


async def check_store(database: DatabaseConfig) -> Check:
    """Open the task store, ask its health and schema version, close it."""
    from mail.db import open_store  # noqa: PLC0415

    backend = database.backend
    if backend == "memory":
        return Check("store", "ok", "persist = false: tasks are kept in memory only")
    where = _where(database)
    fix = (
        "start PostgreSQL or correct DATABASE_URL ([database] url); unset it for SQLite"
        if backend == "postgres"
        else _SQLITE_FIX
    )
    try:
        store = await asyncio.wait_for(open_store(database), _STORE_TIMEOUT)
    except TimeoutError:
        return Check("store", "fail", f"{backend} store at {where}: no answer", fix)
    except Exception as e:  # noqa: BLE001  # any failure to open is the finding
        return Check(
            "store", "fail", f"{backend} store at {where}: {_scrub(str(e), database)}", fix
        )
    try:
        health = await store.health()
        version = await store.schema_version()
    finally:
        await store.close()
    if health != "ok":
        return Check("store", "fail", f"{backend} store at {where}: {health}", fix)
    shared = (
        " (shared with v1.3.6: `mail db-migrate --upgrade-from-v1` once no v1.3.6 server uses it)"
        if store.v1_readable
        else ""
    )
    return Check("store", "ok", f"{backend} store at {where}, schema version {version}{shared}")


def unmade_store(database: DatabaseConfig) -> Check | None:
    """For a SQLite file the server has not made yet, where it would go (``None``
    otherwise): opening the store to check it would create it."""
    if database.backend != "sqlite" or Path(database.sqlite_path).exists():
        return None
    path = Path(database.sqlite_path)
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return Check(
            "store", "fail", f"sqlite store at {path}: {existing} is not writable", _SQLITE_FIX
        )
    return Check("store", "ok", f"sqlite store at {path}: not created yet (the server makes it)")


def check_registry(config: MAILConfig, env: Mapping[str, str]) -> list[Check]:
    """Load the registry file, if any, and check each peer's health (warn when down)."""
    path = Path(config.server.swarm.registry)
    if not path.exists():
        return [Check("registry", "ok", f"no registry file at {path} (no peers)")]
    return asyncio.run(_check_peers(config, env, path))


async def _check_peers(config: MAILConfig, env: Mapping[str, str], path: Path) -> list[Check]:
    from mail.errors import MAILError  # noqa: PLC0415
    from mail.net.registry import SwarmRegistry  # noqa: PLC0415

    swarm = config.server.swarm
    registry = SwarmRegistry(
        swarm.name,
        config.server.advertised_url,
        path,
        env=env,
        request_timeout=HTTP_TIMEOUT,
    )
    try:
        try:
            await registry.load()
        except MAILError as e:
            return [Check("registry", "fail", str(e), f"correct or remove {path}")]
        peers = [name for name in registry.get_all_endpoints() if name != swarm.name]
        if not peers:
            return [Check("registry", "ok", f"{path}: no peers")]
        results = await asyncio.gather(*(registry.check_health(name) for name in peers))
    finally:
        await registry.aclose()
    endpoints = registry.get_all_endpoints()
    down = [
        f"{n} ({endpoints[n].base_url})" for n, ok in zip(peers, results, strict=True) if not ok
    ]
    if down:
        return [
            Check(
                "registry",
                "warn",
                f"unreachable peer(s): {', '.join(down)}",
                f"start those swarms, or remove them from {path}",
            )
        ]
    return [Check("registry", "ok", f"{len(peers)} peer(s) reachable")]
