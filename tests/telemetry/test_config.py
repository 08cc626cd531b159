"""When traces are on (``[server.telemetry]``, ``OTEL_*``), and the one-line refusals of
``mail server`` when they are asked for wrongly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests._servers import clean_env, free_port
from tests.server.conftest import SWARMS_JSON

from mail.config import MAILConfig, load_config
from mail.errors import ConfigurationError
from mail.telemetry import check_telemetry, telemetry_wanted

pytestmark = pytest.mark.timeout(60)

OFF = MAILConfig()
ON = MAILConfig.model_validate({"server": {"telemetry": {"enabled": True}}})


@pytest.mark.parametrize(
    ("config", "env", "wanted"),
    [
        (OFF, {}, False),
        (ON, {}, True),
        (OFF, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        (OFF, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        (OFF, {"OTEL_TRACES_EXPORTER": "console"}, True),
        (OFF, {"OTEL_EXPORTER_OTLP_ENDPOINT": "   "}, False),
        (ON, {"OTEL_SDK_DISABLED": "true"}, False),
        (ON, {"OTEL_TRACES_EXPORTER": "none"}, False),
        (OFF, {"OTEL_SERVICE_NAME": "alpha"}, False),  # names the service, chooses nothing
    ],
)
def test_when_traces_are_on(config: MAILConfig, env: dict[str, str], wanted: bool) -> None:
    assert telemetry_wanted(config, env) is wanted


def test_telemetry_from_the_file_and_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_text(
        '[server.telemetry]\nenabled = true\nendpoint = "http://127.0.0.1:4318"\n'
        'service_name = "mail-alpha"\n',
        encoding="utf-8",
    )
    telemetry = load_config(path, env={}).server.telemetry
    assert telemetry.enabled and telemetry.endpoint == "http://127.0.0.1:4318"
    assert telemetry.service_name == "mail-alpha" and not telemetry.capture_content

    env = {"MAIL_TELEMETRY_CAPTURE_CONTENT": "1", "MAIL_TELEMETRY": "0"}
    with pytest.raises(ConfigurationError, match="endpoint is set but telemetry is not enabled"):
        load_config(path, env=env)
    assert load_config(
        path, env={"MAIL_TELEMETRY_CAPTURE_CONTENT": "1"}
    ).server.telemetry.capture_content


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER=zipkin"),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "one of otlp, console"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            },
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: mail server sends OTLP over HTTP only",
        ),
    ],
)
def test_exporters_mail_server_does_not_make_are_refused(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as refused:
        check_telemetry(OFF, env)
    assert "\n" not in str(refused.value)


def _server(
    tmp_path: Path, env: dict[str, str], *, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    argv = ["mail", "server", "-n", "offline", "-s", str(SWARMS_JSON)]
    argv += ["-p", str(free_port()), "-H", "127.0.0.1"]
    code = f"{prelude}import runpy, sys; sys.argv = {argv!r}; runpy.run_module('mail.cli', run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=clean_env(tmp_path / "data") | env,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MAIL_TELEMETRY_ENDPOINT": "http://127.0.0.1:4318"}, "telemetry is not enabled"),
        ({"MAIL_TELEMETRY": "maybe"}, "MAIL_TELEMETRY"),
        (
            {"MAIL_TELEMETRY": "1", "MAIL_TELEMETRY_ENDPOINT": "ftp://collector"},
            "MAIL_TELEMETRY_ENDPOINT",
        ),
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER=jaeger"),
    ],
)
def test_bad_telemetry_settings_are_one_line(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    result = _server(tmp_path, env)

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert says in lines[0]


def test_traces_without_the_extra_are_one_line_naming_it(tmp_path: Path) -> None:
    # the SDK cannot be imported, as in an installation without mail-swarms[otel]
    blocked = "import sys; sys.modules['opentelemetry.sdk'] = None; "
    result = _server(tmp_path, {"MAIL_TELEMETRY": "1"}, prelude=blocked)

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "install mail-swarms[otel]" in lines[0]


def test_import_mail_loads_no_opentelemetry() -> None:
    code = (
        "import sys, mail, mail.telemetry, mail.core, mail.net; "
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'mail.telemetry._otel'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert result.stdout.strip() == "[]"
