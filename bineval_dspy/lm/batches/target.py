"""Where a run's batches go (an OpenAI-style batch API), the API's limits, and what a dry run says of them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import InputError, keep_secret
from bineval_dspy.lm.prices import BATCH_SUFFIX, price_of
from bineval_dspy.lm.retry import DEFAULT_TIMEOUT
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.usage import dollars

if TYPE_CHECKING:
    from bineval_dspy.lm.estimate import Plan

OPENAI_BASE = "https://api.openai.com/v1"
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"  # the only window OpenAI's batch API offers
MAX_REQUESTS = 50_000  # a batch's limits at OpenAI: requests, and bytes of its input file
MAX_BYTES = 190 * 1024 * 1024



class BatchTarget(BaseModel):
    """Where a batch goes: the API base (``/files`` and ``/batches`` beside ``/chat/completions``), the lm15
    dialect and model name of the wire body, and the key."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    dialect: str  # lm15's provider for the body: "vllm" for a server at --api-base (as lm.remote), else "openai-chat"
    model: str
    api_key: str = Field(repr=False)
    timeout: float = DEFAULT_TIMEOUT


def batch_target(options: LMOptions, budgeted: bool = False) -> BatchTarget:
    """The batch API of a run's LM, or one line saying why the run cannot use one: an embedded model runs in this
    process; providers other than OpenAI-style ones have batch APIs of their own; a budget (``budgeted``) cannot
    stop a batch, which is billed whole once submitted; nor can client-side rate limits pace it."""
    from bineval_dspy.lm.remote import _checked_url
    from bineval_dspy.lm.specs import is_embedded

    if budgeted:
        raise InputError("`batch`: a batch is billed whole once submitted, so `max_cost` and `max_calls` cannot stop it; size the run with `limit`")
    if options.rpm is not None or options.tpm is not None:
        raise InputError("`batch`: the provider paces a batch itself, so `rpm` and `tpm` cannot; leave them out")
    if options.replicas:
        raise InputError("`batch`: a batch goes to one server's batch API; give `api_base` alone, without `replicas`")
    spec, flag = options.spec, f"{options.source} {options.spec}"
    if is_embedded(spec):
        raise InputError(f"`batch`: {flag} runs in this process; a batch goes to a provider's batch API (`lm` openai/<model>, or `api_base`)")
    prefix, _, model = spec.partition("/")
    timeout = options.timeout or DEFAULT_TIMEOUT
    keep_secret(options.api_key)  # the batch API's errors are written into run records
    if options.api_base:
        return BatchTarget(base_url=_checked_url(options.api_base), dialect="vllm", model=model or spec, api_key=options.api_key or "EMPTY", timeout=timeout)
    if prefix != "openai" or not model:
        raise InputError(f"`batch`: {flag}: only OpenAI-style batch APIs (/v1/files + /v1/batches); use `lm` openai/<model> or a server at `api_base`")
    key = options.api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise InputError(f"`batch`: {flag}: no API key: set OPENAI_API_KEY, or name the variable with `api_key_env`")
    keep_secret(key)
    return BatchTarget(base_url=OPENAI_BASE, dialect="openai-chat", model=model, api_key=key, timeout=timeout)


def batch_plan(target: BatchTarget, plan: Plan) -> str:
    """The line ``--batch --dry-run`` adds to the plan: where its calls would go, in how many batches, at what price."""
    price = None if target.dialect == "vllm" else price_of(plan.model + BATCH_SUFFIX)
    most = None if price is None else plan.prompt_tokens * price.input + plan.calls * plan.completion_limit * price.output
    usd = "price unknown" if most is None else f"at most {dollars(most)} at batch rates"
    batches = max(1, -(-plan.calls // MAX_REQUESTS))
    return (
        f"`batch`: would submit {plan.calls:,} request(s) in {batches} batch(es) to {target.base_url}/files and "
        f"{target.base_url}/batches (endpoint {ENDPOINT}, model {target.model}, window {COMPLETION_WINDOW}); {usd}; "
        "requests that depend on a reply (`explanations` failures: the explanation of a 'no') go in a later batch; nothing was submitted"
    )

