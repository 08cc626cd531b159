"""The server's side of task budgets: each swarm's ceiling, and the price of model calls.

A swarm's ceiling is its ``budget`` in swarms.json, each limit it leaves out taken from
mail.toml's ``[server.budget]``. The cost of a model call comes from
``[server.budget.prices]`` (USD per million tokens) or, for a model not listed there, from
LiteLLM's table of model prices, read from the JSON file the litellm package ships (without
importing litellm), once, when a cost is first asked for. A model found in neither costs
nothing, and the runtime logs it once.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail.core.budget import Budget

if TYPE_CHECKING:
    from mail.config.server import BudgetConfig

__all__ = ["Prices", "ceiling"]

logger = logging.getLogger("mail.server")

#: The file of model prices the litellm package ships (read without importing litellm).
_LITELLM_PRICES = "model_prices_and_context_window_backup.json"
_MILLION = 1_000_000


def ceiling(config: BudgetConfig, swarm: Budget | None) -> Budget | None:
    """The limits of a swarm's tasks: the swarm's own, mail.toml's for the others."""
    merged = {**config.limits(), **(swarm.as_json() if swarm is not None else {})}
    return Budget.from_json(merged) or None


def _litellm_table() -> dict[str, Any]:
    """LiteLLM's model prices by model name (empty when litellm is not installed)."""
    spec = importlib.util.find_spec("litellm")  # finds the package, imports nothing
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / _LITELLM_PRICES
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        logger.warning("cannot read LiteLLM's model prices from %s: %s", path, e)
        return {}
    return table if isinstance(table, dict) else {}


def _per_token(entry: Mapping[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class Prices:
    """What a model call costs in USD (a :class:`mail.core._budget_keeper.Pricer`).

    ``table``: model -> ``{"input": usd, "output": usd, "cached_input": usd}`` per million
    tokens (mail.toml's); ``litellm``: also look models up in LiteLLM's table.
    """

    def __init__(self, table: Mapping[str, Mapping[str, float]], *, litellm: bool = True) -> None:
        self._table = {
            model: {k: v / _MILLION for k, v in prices.items()} for model, prices in table.items()
        }
        self._litellm = litellm
        self._known: dict[str, Any] | None = None

    def __call__(self, model: str | None, usage: Mapping[str, object]) -> float | None:
        if model is None:
            return None
        prices = self._prices(model)
        if prices is None:
            return None
        tokens = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
        cached = min(tokens.get("cached_input_tokens", 0), tokens.get("input_tokens", 0))
        cached_price = prices.get("cached_input")
        if cached_price is None:
            cached, cached_price = 0, 0.0
        fresh = tokens.get("input_tokens", 0) - cached
        return (
            fresh * prices.get("input", 0.0)
            + cached * cached_price
            + tokens.get("output_tokens", 0) * prices.get("output", 0.0)
        )

    def _prices(self, model: str) -> dict[str, float] | None:
        """Per-token prices of ``model`` (``openai/gpt-4o`` is also looked up as ``gpt-4o``)."""
        names = (model, model.split("/", 1)[1]) if "/" in model else (model,)
        for name in names:
            if name in self._table:
                return self._table[name]
        if not self._litellm:
            return None
        if self._known is None:
            self._known = _litellm_table()
        for name in names:
            entry = self._known.get(name)
            if isinstance(entry, Mapping):
                found = {
                    "input": _per_token(entry, "input_cost_per_token"),
                    "output": _per_token(entry, "output_cost_per_token"),
                    "cached_input": _per_token(entry, "cache_read_input_token_cost"),
                }
                return {k: v for k, v in found.items() if v is not None}
        return None
