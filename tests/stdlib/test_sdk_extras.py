"""The SDK-based agents, at home in mail.factories and re-exported by mail.stdlib: without the
provider's SDK installed they fail with one line that names the extra to install (checked
in a child process where the SDK cannot be imported)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PROBE = """
import sys
sys.modules[{module!r}] = None  # as if not installed
from mail.errors import ConfigurationError
from {package} import {cls}
agent = {cls}("worker", [], "model", [], api_key="k")
try:
    agent.client()
except ConfigurationError as e:
    print(e)
"""


@pytest.mark.parametrize(
    ("module", "package", "cls", "extra"),
    [
        ("openai", "mail.stdlib.openai", "OpenAIChatCompletionsAgentFunction", "openai"),
        ("openai", "mail.factories.openai", "OpenAIResponsesAgentFunction", "openai"),
        ("anthropic", "mail.stdlib.anthropic", "AnthropicAgentFunction", "anthropic"),
        ("anthropic", "mail.factories.anthropic", "AnthropicSupervisorFunction", "anthropic"),
    ],
)
def test_a_missing_sdk_names_the_extra(module: str, package: str, cls: str, extra: str) -> None:
    code = PROBE.format(module=module, package=package, cls=cls)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == (
        f"the {extra} agents need the {module} package: pip install 'mail-swarms[{extra}]'"
    )


@pytest.mark.parametrize(
    ("kept", "home"),
    [
        ("mail.stdlib.openai", "mail.factories.openai"),
        ("mail.stdlib.openai.agents", "mail.factories.openai"),
        ("mail.stdlib.anthropic", "mail.factories.anthropic"),
        ("mail.stdlib.anthropic.agents", "mail.factories.anthropic"),
    ],
)
def test_the_stdlib_paths_re_export_the_factories_classes(kept: str, home: str) -> None:
    kept_module, home_module = importlib.import_module(kept), importlib.import_module(home)
    assert kept_module.__all__ == home_module.__all__
    for name in home_module.__all__:
        assert getattr(kept_module, name) is getattr(home_module, name)
