"""``--dry-run``: what a run would ask of its LM (calls, prompt tokens, dollars), worked out without calling it.

Prompts are the messages DSPy's adapter would send, counted with the model's own tokenizer where we hold it (an
embedded GGUF model, read vocabulary-only: no weights loaded); for any other model the count is estimated at
``CHARS_PER_TOKEN`` characters a token and says so. Dollars come from the bundled price map (``lm.prices``):
prompt tokens at the input rate plus each call's completion limit at the output rate, so the figure is an upper
bound; a model without a price says "price unknown", never $0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error, read_json, write_text_atomic
from bineval_dspy.lm.usage import Cost, dollars

CHARS_PER_TOKEN = 4  # the usual English average; used only where the model's tokenizer is not at hand
# prompts built from text not yet written are estimated at these sizes (with smollm2's tokenizer)
NOTE_TOKENS = 600  # a note-taker or prompt-updater call: the instructions, one failure and the lesson so far
JUDGE_OVERHEAD_TOKENS = 450  # a judge call's instructions and verdict schema, beside the input and the response
RATING_OVERHEAD_TOKENS = 300  # a holistic or UniEval prompt's instructions and definition

Counter = Callable[[str], int]


PLAN_FILE = "plan.json"


@dataclass(frozen=True)
class Plan:
    """The LM work of one run: calls, the prompt tokens they send, each call's completion limit, whether the
    tokens were counted by the model's tokenizer (else at ``CHARS_PER_TOKEN``), and which parts had to be estimated
    on either basis (prompts built from outputs not yet written)."""

    what: str
    calls: int
    prompt_tokens: int
    completion_limit: int
    tokenized: bool
    model: str
    api_base: str | None = None
    estimated: str = ""

    def basis(self) -> str:
        """How the prompt tokens were counted: one basis for every command."""
        counted = f"counted with {self.model}'s tokenizer" if self.tokenized else f"estimated at ~{CHARS_PER_TOKEN} characters a token"
        return counted + (f"; {self.estimated} estimated" if self.estimated else "")

    def usd(self) -> float | None:
        """The most it costs at the model's list price; None when the model has no price (or is on a server)."""
        from bineval_dspy.lm.prices import price_of

        price = None if self.api_base else price_of(self.model)
        if price is None:
            return None
        return self.prompt_tokens * price.input + self.calls * self.completion_limit * price.output

    def summary(self) -> str:
        """The one line ``--dry-run`` prints."""
        usd = self.usd()
        price = "price unknown" if usd is None else f"at most {dollars(usd)} (list price, every call using its completion limit)"
        return (
            f"dry run: {self.what}: {self.calls:,} LM call(s), {self.prompt_tokens:,} prompt tokens ({self.basis()}), "
            f"at most {self.completion_limit:,} completion tokens a call; {price}; no LM was called"
        )

    def save(self, run_dir: Path) -> None:
        """``RUN_DIR/plan.json``: what the run was planned to ask, for ``show`` to hold against what it spent."""
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(run_dir / PLAN_FILE, _PLAN.dump_json(self, indent=2).decode("utf-8"))

    def against(self, spent: Cost) -> str:
        """The plan beside what a run spent: calls and prompt tokens, each with its share of the plan."""

        def share(used: int, planned: int) -> str:
            return f" ({used / planned:.0%} of the plan)" if planned else ""

        return (
            f"planned at most {self.calls:,} LM call(s), {self.prompt_tokens:,} prompt tokens ({self.basis()}); "
            f"spent {spent.lm_calls:,} call(s){share(spent.lm_calls, self.calls)}, "
            f"{spent.prompt_tokens:,} prompt tokens{share(spent.prompt_tokens, self.prompt_tokens)}"
        )


_PLAN = TypeAdapter(Plan)


def load_plan(run_dir: Path) -> Plan | None:
    """A run's saved plan; None for a run that saved none (or one written before plans were kept)."""
    path = run_dir / PLAN_FILE
    if not path.is_file():
        return None
    try:
        return _PLAN.validate_python(read_json(path))
    except ValidationError as exc:  # a damaged plan is one located line, as every file a run reads
        raise InputError(f"{path}: {describe_validation_error(exc)}") from None


@cache
def _embedded_counter(path: str) -> Counter:
    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    from bineval_dspy.lm._decoding import loaded

    with suppress_stdout_stderr(disable=False):  # a vocabulary-only context warns of its 0-token training context
        vocab = loaded(llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False))
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def token_counter(spec: str) -> tuple[Counter, bool]:
    """A function counting the tokens of a text for the model ``spec``, and whether it is the model's own
    tokenizer (an embedded GGUF model) rather than the character estimate."""
    from bineval_dspy.lm.specs import is_embedded, model_file

    if is_embedded(spec):
        try:
            return _embedded_counter(str(model_file(spec))), True
        except Exception:  # a file llama.cpp cannot read: estimate rather than fail the plan
            pass
    return (lambda text: math.ceil(len(text) / CHARS_PER_TOKEN)), False


def message_tokens(count: Counter, messages: Iterable[dict[str, Any]]) -> int:
    """The tokens of a chat prompt: each message's text (a few template tokens per message besides)."""
    return sum(count(str(m.get("content", ""))) + 4 for m in messages)


def formatted(predictor: Any, adapter: Any, inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages ``adapter`` would send for ``predictor`` on ``inputs`` (its demos included), with no call."""
    demos = [d.toDict() if hasattr(d, "toDict") else dict(d) for d in getattr(predictor, "demos", [])]
    return adapter.format(predictor.signature, demos=demos, inputs=inputs)


def completion_limit() -> int:
    """The completion tokens an LM call may take unless a command sets it (``make_lm``'s ``max_tokens``)."""
    import inspect

    from bineval_dspy.lm.specs import make_lm

    return int(inspect.signature(make_lm).parameters["max_tokens"].default)
