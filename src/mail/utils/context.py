"""v1.3.6's ``mail.utils.context``: the context window of a model."""

from __future__ import annotations

__all__ = ["get_model_ctx_len"]


def get_model_ctx_len(llm: str) -> int:
    """The input context length of model ``llm`` (a LiteLLM name such as
    ``"openai/gpt-5-mini"``), from LiteLLM's model table. Raises ``ValueError`` for a model
    LiteLLM does not know."""
    import litellm  # noqa: PLC0415  # heavy: only when asked

    names = [llm, llm.split("/", 1)[1]] if "/" in llm else [llm]
    for name in names:
        try:
            info = litellm.get_model_info(name)
        except Exception:  # noqa: BLE001, S112  # litellm raises bare Exception for unknown models
            continue
        length = info.get("max_input_tokens") or info.get("max_tokens")
        if length:
            return int(length)
    raise ValueError(f"unknown model {llm!r}: its context length is not known")
