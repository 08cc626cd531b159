"""The container files, checked without a Docker engine (issue 9).

The Dockerfile is parsed into instructions; what it copies must exist, the commands it
runs must work here (``uv sync``, the health check, ``mail server`` with the CMD's flags).
docker-compose.yml must parse and wire the server to PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from tests._servers import Server, clean_env, free_port

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
COMPOSE = REPO / "docker-compose.yml"

pytestmark = pytest.mark.timeout(120)

_INSTRUCTIONS = {
    "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
    "LABEL", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR",
}  # fmt: skip


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """``[(INSTRUCTION, arguments)]``: comments dropped, continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line.startswith("#") and not pending):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, arguments = full.partition(" ")
        assert keyword.upper() in _INSTRUCTIONS, f"unknown instruction: {full}"
        instructions.append((keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))


def _all(instructions: list[tuple[str, str]], keyword: str) -> list[str]:
    return [arguments for name, arguments in instructions if name == keyword]


def _one(instructions: list[tuple[str, str]], keyword: str) -> str:
    found = _all(instructions, keyword)
    assert len(found) == 1, f"expected one {keyword}, found {found}"
    return found[0]


def _exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list)
    assert all(isinstance(v, str) for v in value)
    return value


def _healthcheck_command(instructions: list[tuple[str, str]]) -> list[str]:
    healthcheck = _one(instructions, "HEALTHCHECK")
    _, _, command = healthcheck.partition("CMD ")
    assert command, healthcheck
    if command.lstrip().startswith("["):
        return _exec_form(command)
    return shlex.split(command)


# --- the Dockerfile ------------------------------------------------------------------------


def test_dockerfile_parser_joins_continuations_and_drops_comments() -> None:
    text = '# c\nFROM x\nRUN a \\\n    # inner\n    && b\n\nCMD ["y"]\n'
    assert parse_dockerfile(text) == [("FROM", "x"), ("RUN", "a && b"), ("CMD", '["y"]')]
    with pytest.raises(AssertionError):
        parse_dockerfile("FORM x\n")


def test_base_image_is_python_slim(dockerfile: list[tuple[str, str]]) -> None:
    assert dockerfile[0][0] == "FROM"
    assert re.fullmatch(r"python:3\.1[1-9]-slim", dockerfile[0][1])


def test_runs_as_a_non_root_user(dockerfile: list[tuple[str, str]]) -> None:
    users = _all(dockerfile, "USER")
    assert users, "no USER instruction"
    assert users[-1] not in {"root", "0"}
    setup = " ".join(_all(dockerfile, "RUN"))
    assert f"useradd --uid 10001 --gid {users[-1]}" in setup
    # the user is set before anything is installed into /app
    names = [name for name, _ in dockerfile]
    assert names.index("USER") < names.index("COPY")


def test_uv_installs_the_locked_dependencies(dockerfile: list[tuple[str, str]]) -> None:
    runs = _all(dockerfile, "RUN")
    assert any("pip install" in run and "uv" in run for run in runs)
    # with the cluster extra: the same image runs a single server or a replica
    assert "uv sync --locked --no-dev --extra cluster --no-install-project" in runs
    # the project itself goes in compiled, not as an editable link to its sources
    assert "uv sync --locked --no-dev --extra cluster --no-editable" in runs
    env = " ".join(_all(dockerfile, "ENV"))
    assert "MAIL_DATA_DIR=/data" in env
    assert "/app/.venv/bin" in env
    assert _one(dockerfile, "WORKDIR") == "/app"
    # keys, tasks and the registry in /data; /app/registries for registries of the previous
    # release and the original's `-v ./registries:/app/registries` (still read)
    assert _one(dockerfile, "VOLUME") == '["/data", "/app/registries"]'
    assert _one(dockerfile, "EXPOSE") == "8000"


def test_every_copied_path_exists(dockerfile: list[tuple[str, str]]) -> None:
    copies = _all(dockerfile, "COPY")
    assert copies
    copied: list[str] = []
    for arguments in copies:
        words = [w for w in shlex.split(arguments) if not w.startswith("--")]
        *sources, _destination = words
        assert sources, arguments
        copied += sources
    for source in copied:
        assert (REPO / source).exists(), f"COPY {source}: no such path in the repository"
    for needed in ("pyproject.toml", "uv.lock", "README.md", "src/", "mail.toml", "swarms.json"):
        assert needed in copied


def test_dockerignore_keeps_local_state_out() -> None:
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".venv", ".git", ".mail", ".mail-*", "**/__pycache__"):
        assert entry in ignored
    # nothing the Dockerfile copies is ignored
    for kept in ("src", "spec", "uv.lock", "mail.toml", "swarms.json", "README.md"):
        assert kept not in ignored


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("path", [".mail/credentials.json", ".mail-alpha/credentials.json"])
def test_data_directories_are_ignored_by_git(path: str) -> None:
    # they hold API keys; the README's federation steps create .mail-alpha and .mail-beta
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a git checkout")
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", path], cwd=REPO, timeout=30, check=False
    )
    assert ignored.returncode == 0, f"{path} is not ignored by .gitignore"


def test_cmd_runs_mail_server(dockerfile: list[tuple[str, str]]) -> None:
    cmd = _exec_form(_one(dockerfile, "CMD"))
    # no -p: the port is MAIL_PORT, which the health check reads too
    assert cmd == ["mail", "server", "-c", "/app/mail.toml", "-H", "0.0.0.0"]  # noqa: S104
    env = " ".join(args for instruction, args in dockerfile if instruction == "ENV")
    assert "MAIL_PORT=8000" in env.split()
    assert ("EXPOSE", "8000") in dockerfile


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_uv_sync_step_works_here() -> None:
    help_text = subprocess.run(
        ["uv", "sync", "--help"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    if "--dry-run" in help_text:
        command = ["uv", "sync", "--locked", "--no-dev", "--dry-run"]
    else:
        command = ["uv", "lock", "--check"]
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    result = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=90, env=env, check=False
    )
    assert result.returncode == 0, result.stderr


# --- the CMD and HEALTHCHECK against a real server -------------------------------------------


@pytest.fixture(scope="module")
def server(
    dockerfile: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """``mail server`` with the CMD's flags (loopback instead of 0.0.0.0) and, as the image
    would, the port from ``MAIL_PORT`` (a free one instead of 8000)."""
    cmd = _exec_form(_one(dockerfile, "CMD"))
    assert cmd[:2] == ["mail", "server"]
    port = free_port()
    flags = {"-c": str(REPO / "mail.toml"), "-H": "127.0.0.1"}
    args = [flags.get(previous, word) for previous, word in zip(["", *cmd[:-1]], cmd, strict=True)]
    data_dir = tmp_path_factory.mktemp("container-data")
    env = clean_env(data_dir) | {
        "MAIL_PORT": str(port),
        # the default too (the data directory), named so that no old file is picked up
        "SWARM_REGISTRY_FILE": str(data_dir / "registries" / "offline.json"),
    }
    command = [sys.executable, "-m", "mail.cli", *args[1:]]
    log = data_dir / "server.log"
    url = f"http://127.0.0.1:{port}"
    with Server(command, env=env, cwd=data_dir, log=log, url=url) as server:
        yield port
        server.terminate(timeout=20)  # as `docker stop` would


def test_cmd_flags_start_a_healthy_server(server: int) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{server}/health", timeout=5) as response:
        assert response.status == 200
        assert json.load(response)["status"] == "healthy"


def test_healthcheck_follows_the_configured_port(
    dockerfile: list[tuple[str, str]], server: int
) -> None:
    command = _healthcheck_command(dockerfile)
    assert command[:2] == ["python", "-c"]
    script = command[2]
    assert "MAIL_PORT" in script

    def check(env: dict[str, str]) -> int:
        base = {k: v for k, v in os.environ.items() if k != "MAIL_PORT"}
        run = subprocess.run(
            [sys.executable, "-c", script], env=base | env, timeout=30, check=False,
            capture_output=True,
        )  # fmt: skip
        return run.returncode

    assert check({"MAIL_PORT": str(server)}) == 0
    # and it fails when nothing answers on the configured port
    assert check({"MAIL_PORT": str(free_port())}) != 0


# --- docker-compose.yml ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, object]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_compose_has_the_server_and_postgres(compose: dict[str, object]) -> None:
    assert "version" not in compose
    services = compose["services"]
    assert isinstance(services, dict)
    assert set(services) == {"postgres", "mail"}
    assert str(services["postgres"]["image"]).startswith("postgres:16")
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    mail = services["mail"]
    assert mail["build"] == "."
    assert "8000:8000" in mail["ports"]
    assert mail["environment"]["MAIL_DATA_DIR"] == "/data"
    assert any(str(v).endswith(":/data") for v in mail["volumes"])
    assert mail["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    declared = set(compose.get("volumes") or {})  # type: ignore[call-overload]
    for service in services.values():
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"volume {source} is not declared"


def _interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME:-default}``: the variable when set and not empty, else the default."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: env.get(m.group(1)) or m.group(2), str(value))


def test_compose_database_url_matches_postgres(compose: dict[str, object]) -> None:
    services = compose["services"]
    assert isinstance(services, dict)
    postgres = services["postgres"]["environment"]
    # one variable sets both, with a documented default
    assert postgres["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-mail}"
    for env in ({}, {"POSTGRES_PASSWORD": "s3cret"}):
        password = _interpolate(postgres["POSTGRES_PASSWORD"], env)
        url = urlsplit(_interpolate(services["mail"]["environment"]["DATABASE_URL"], env))
        assert url.password == password == env.get("POSTGRES_PASSWORD", "mail")
    assert url.scheme in {"postgresql", "postgres"}
    assert url.username == postgres["POSTGRES_USER"]
    assert url.hostname == "postgres"
    assert url.port == 5432
    assert url.path.lstrip("/") == postgres["POSTGRES_DB"]


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_the_wheel_the_image_installs_carries_the_protocol_text(tmp_path: Path) -> None:
    # `uv sync --no-editable` installs the built wheel: the `help` tool's protocol text
    # must be in it, not only in the repository
    subprocess.run(
        ["uv", "build", "--wheel", "-q", "-o", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=110,
    )
    (wheel,) = tmp_path.glob("mail_swarms-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mail/spec/SPEC.md" in names
    assert {"mail/__init__.py", "mail/core/runtime.py", "mail/server/_app.py"} <= names
    # the viewer's page, its vendored libraries and their licences
    vendor = "mail/server/ui/assets/vendor/"
    assert {
        "mail/server/ui/index.html",
        vendor + "markdown-it.min.js",
        vendor + "purify.es.js",
        vendor + "LICENSE-markdown-it.txt",
        vendor + "LICENSE-dompurify.txt",
    } <= names


# --- docker-compose.cluster.yml and nginx.cluster.conf ---------------------------------------

CLUSTER_COMPOSE = REPO / "docker-compose.cluster.yml"
NGINX_CONF = REPO / "nginx.cluster.conf"
REPLICAS = ("mail-1", "mail-2", "mail-3")


@pytest.fixture(scope="module")
def cluster_compose() -> dict[str, object]:
    data = yaml.safe_load(CLUSTER_COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_cluster_compose_has_postgres_redis_three_replicas_and_nginx(
    cluster_compose: dict[str, object],
) -> None:
    assert "version" not in cluster_compose
    services = cluster_compose["services"]
    assert isinstance(services, dict)
    assert set(services) == {"postgres", "redis", *REPLICAS, "nginx"}
    assert str(services["postgres"]["image"]).startswith("postgres:16")
    assert str(services["redis"]["image"]).startswith("redis:")
    assert "ping" in services["redis"]["healthcheck"]["test"]
    ids = set()
    for name in REPLICAS:
        replica = services[name]
        assert replica["build"] == "."  # the same image as docker-compose.yml's
        assert "ports" not in replica  # reached through nginx only
        env = replica["environment"]
        assert env["MAIL_DATA_DIR"] == "/data"
        assert urlsplit(env["MAIL_REDIS_URL"]).hostname == "redis"
        ids.add(env["MAIL_REPLICA_ID"])
        assert any(str(v).endswith(":/data") for v in replica["volumes"])
        assert replica["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
        }
    assert ids == set(REPLICAS)
    # each replica its own data volume, every named volume declared
    sources = [str(services[n]["volumes"][0]).split(":")[0] for n in REPLICAS]
    assert len(set(sources)) == 3
    declared = set(cluster_compose.get("volumes") or {})  # type: ignore[call-overload]
    for service in services.values():
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"volume {source} is not declared"
    nginx = services["nginx"]
    assert "8000:8000" in nginx["ports"]
    assert "./nginx.cluster.conf:/etc/nginx/nginx.conf:ro" in nginx["volumes"]


def test_cluster_compose_replicas_share_one_database(cluster_compose: dict[str, object]) -> None:
    services = cluster_compose["services"]
    assert isinstance(services, dict)
    postgres = services["postgres"]["environment"]
    assert postgres["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-mail}"
    urls = {services[n]["environment"]["DATABASE_URL"] for n in REPLICAS}
    assert len(urls) == 1
    for env in ({}, {"POSTGRES_PASSWORD": "s3cret"}):
        url = urlsplit(_interpolate(next(iter(urls)), env))
        assert url.password == env.get("POSTGRES_PASSWORD", "mail")
        assert url.hostname == "postgres"
        assert url.username == postgres["POSTGRES_USER"]
        assert url.path.lstrip("/") == postgres["POSTGRES_DB"]


def _directives(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def test_nginx_round_robins_over_the_three_replicas_without_stickiness() -> None:
    directives = _directives(NGINX_CONF.read_text(encoding="utf-8"))
    servers = [d for d in directives if d.startswith("server mail-")]
    assert [s.split()[1] for s in servers] == [f"{n}:8000" for n in REPLICAS]
    text = " ".join(directives)
    for sticky in ("ip_hash", "hash ", "sticky", "least_conn", "random"):
        assert sticky not in text, sticky
    assert "listen 8000;" in directives
    assert "proxy_pass http://mail;" in directives
    assert "proxy_buffering off;" in directives  # event streams pass through at once
    assert text.count("{") == text.count("}")
