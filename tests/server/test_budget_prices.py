"""What a model call costs: mail.toml's price table first, then LiteLLM's table, read from
the file the litellm package ships, in a process that never imports litellm."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from mail.config import load_config
from mail.errors import ConfigurationError
from mail.server._budgets import Prices

USAGE = {"input_tokens": 1000, "output_tokens": 500, "cached_input_tokens": 400}


def test_the_mail_toml_table_prices_per_million_tokens() -> None:
    prices = Prices({"my-model": {"input": 2.0, "output": 8.0}}, litellm=False)

    # cached input tokens cost the input price when the table gives no cached price
    assert prices("my-model", USAGE) == pytest.approx(1000 * 2e-6 + 500 * 8e-6)
    assert prices("provider/my-model", USAGE) == prices("my-model", USAGE)
    assert prices("unknown-model", USAGE) is None
    assert prices(None, USAGE) is None


def test_cached_input_has_its_own_price_when_given() -> None:
    prices = Prices({"m": {"input": 2.0, "output": 8.0, "cached_input": 1.0}}, litellm=False)

    assert prices("m", USAGE) == pytest.approx(600 * 2e-6 + 400 * 1e-6 + 500 * 8e-6)


def test_litellm_prices_are_read_without_importing_litellm() -> None:
    script = (
        "import json, sys\n"
        "from mail.server._budgets import Prices\n"
        f"usage = {USAGE!r}\n"
        "prices = Prices({})\n"
        "print(json.dumps([prices('openai/gpt-4o-mini', usage), prices('nowhere/none', usage),"
        " 'litellm' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    cost, unknown, imported = json.loads(out.stdout)

    # gpt-4o-mini in LiteLLM's table: 0.15 / 0.075 (cached) / 0.60 USD per million tokens
    assert cost == pytest.approx(600 * 0.15e-6 + 400 * 0.075e-6 + 500 * 0.6e-6)
    assert unknown is None
    assert imported is False


def test_the_table_of_mail_toml_wins_over_litellm_s() -> None:
    prices = Prices({"gpt-4o-mini": {"input": 0.0, "output": 0.0}})

    assert prices("openai/gpt-4o-mini", USAGE) == 0.0


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"total_tokens": -1}, "'server.budget.total_tokens': Input should be greater than or"),
        ({"warn_at": 2}, "'server.budget.warn_at': Input should be less than 1"),
        ({"tokens": 3}, "unknown key 'server.budget.tokens'"),
        ({"prices": {"m": {"input": 1}}}, "'server.budget.prices.m.output': Field required"),
    ],
)
def test_a_bad_server_budget_is_a_configuration_error_naming_the_key(
    budget: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        load_config(None, env={}, search=False, overrides={"server": {"budget": budget}})
