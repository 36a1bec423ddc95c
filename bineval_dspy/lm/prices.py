"""US-dollar prices per token, from the cost map that ships inside the installed LiteLLM package.

The map is read as a file through LiteLLM's distribution record, so looking a price up imports no LiteLLM and
never fetches the newer map LiteLLM publishes online: a price is the installed package's, offline and the same on
every run. Base rates, and batch rates for a model string ending in ``BATCH_SUFFIX`` (``judge --batch``: the map's
batch rates where it has them, else half the base rates); no priority or long-context tiers. A model the map
lacks, an embedded model and a model behind ``--api-base`` (whose server sets its own price) have no price:
``None``, never 0.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from bineval_dspy.core.errors import InputError

COST_MAP = "litellm/model_prices_and_context_window_backup.json"
BATCH_SUFFIX = "+batch"  # a model string answered through a provider's batch API (``bineval_dspy.lm.batches``)
BATCH_DISCOUNT = 0.5  # batch rates where the map gives none: OpenAI's and Anthropic's batch APIs bill half


class Price(BaseModel):
    """US dollars per token of one model; cache rates fall back to the input rate where the map gives none."""

    model_config = ConfigDict(frozen=True)

    entry: str  # the key of the cost map's entry
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def usd(self, usage: dict[str, Any]) -> float:
        """The dollars of one usage record (DSPy's: ``prompt_tokens`` count cached and cache-written ones too)."""
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        written = int(details.get("cache_creation_tokens") or 0)
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        return max(prompt - cached - written, 0) * self.input + cached * read_rate + written * write_rate + completion * self.output


@functools.cache
def cost_map() -> dict[str, Any]:
    """The installed LiteLLM's bundled map (model -> rates); empty when LiteLLM is not installed."""
    try:
        path = Path(str(importlib.metadata.distribution("litellm").locate_file(COST_MAP)))
        return json.loads(path.read_text(encoding="utf-8"))
    except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
        return {}


def _rate(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@functools.cache
def price_of(model: str) -> Price | None:
    """The price of an LM by its model string (``openai/gpt-4o-mini``), or None when it is unknown; a string
    ending in ``BATCH_SUFFIX`` is priced at the model's batch rates.

    The map names most models without their provider (``gpt-4o-mini``, provider ``openai``), some with it
    (``gemini/gemini-2.5-flash``); a name found without its prefix counts only when the entry's provider is it.
    """
    batch = model.endswith(BATCH_SUFFIX)
    model = model.removesuffix(BATCH_SUFFIX)
    if "@" in model or "/" not in model:  # embedded (``local/...@sha256-...``) or on a server of its own
        return None
    provider, name = model.split("/", 1)
    table = cost_map()
    for key in (model, name):
        entry = table.get(key)
        if not isinstance(entry, dict) or (key == name and entry.get("litellm_provider") != provider):
            continue
        rates = [_rate(entry, k) for k in ("input_cost_per_token", "output_cost_per_token")]
        if rates[0] is None or rates[1] is None:
            continue
        price = Price(
            entry=key,
            input=rates[0],
            output=rates[1],
            cache_read=_rate(entry, "cache_read_input_token_cost"),
            cache_write=_rate(entry, "cache_creation_input_token_cost"),
        )
        return _batched(price, entry) if batch else price
    return None


def _batched(price: Price, entry: dict[str, Any]) -> Price:
    """The batch rates of a priced model: the map's where it has them, else ``BATCH_DISCOUNT`` of each rate."""

    def rate(key: str, base: float) -> float:
        stated = _rate(entry, key)
        return base * BATCH_DISCOUNT if stated is None else stated

    return Price(
        entry=f"{price.entry}{BATCH_SUFFIX}",
        input=rate("input_cost_per_token_batches", price.input),
        output=rate("output_cost_per_token_batches", price.output),
        cache_read=None if price.cache_read is None else rate("cache_read_input_token_cost_batches", price.cache_read),
        cache_write=None if price.cache_write is None else rate("cache_creation_input_token_cost_batches", price.cache_write),
    )


def check_priced(models: Iterable[str]) -> None:
    """A dollar budget (``--max-cost``) needs every LM's price: refuse, before any call, an LM without one."""
    for model in models:
        if price_of(model) is None:
            raise InputError(
                f"`max_cost`: the price of LM {model!r} is unknown (LiteLLM's bundled price map lacks it; embedded models "
                "and servers at `api_base` have none); use `max_calls`"
            )
