"""Without the provider's SDK installed, the stdlib agents fail with one line that names the
extra to install (checked in a child process where the SDK cannot be imported)."""

from __future__ import annotations

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
        ("openai", "mail.stdlib.openai", "OpenAIResponsesAgentFunction", "openai"),
        ("anthropic", "mail.stdlib.anthropic", "AnthropicAgentFunction", "anthropic"),
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
