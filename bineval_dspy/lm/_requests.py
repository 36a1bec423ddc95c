"""How the embedded engine reads and orders requests: which are structured, sampled or prefilled and so batched, the
KV cells each may fill, and the order that lets requests of one output (or samples of one prompt) share KV cells;
a request's failure kept as its own outcome."""

from __future__ import annotations

from typing import Any

from dspy.lm15 import Request

from bineval_dspy.enforce.steering import from_metadata
from bineval_dspy.lm._batching import common_prefix
from bineval_dspy.lm._decoding import MAX_TOKENS

SAME_OUTPUT = 16  # prompt tokens two requests share past a batch's common prefix when they judge one output


def _structured(request: Request) -> bool:
    """A call answering in a schema (a verdict, a checklist): it may share KV cells and decoding steps with others.
    Free text is decoded alone, so its prompt alone decides its tokens (see the module docstring)."""
    return bool(request.config.response_format)


def _sampled_text(request: Request) -> bool:
    """A free-text sample (a Best-of-N draw): batched with the other samples of its prompt, which share its
    prefill (see ``_complete_batch``)."""
    return bool(request.config.temperature) and not _structured(request)


def _prefill(request: Request) -> str | None:
    """The text a request's reply must continue: its last message when that is the assistant's."""
    last = request.messages[-1] if request.messages else None
    return last.text if last is not None and last.role == "assistant" else None


def _batchable(request: Request) -> bool:
    """Greedy structured calls and free-text samples go to the batcher; the rest decode alone."""
    return (not request.config.temperature and _structured(request)) or _sampled_text(request)


FORCED_CELLS = 384  # room for the text a steered request's constraints force beside its decoded tokens


def _cells(tokens: list[int], request: Request) -> int:
    """The KV cells a request may fill: its prompt and its longest reply (``_Decoding``'s token limit), and the
    forced text of a steered one."""
    steered = from_metadata(request.config.extensions) is not None
    return len(tokens) + (request.config.max_tokens or MAX_TOKENS) + (FORCED_CELLS if steered else 0)


def _fed(tokens: list[int], position: int, stream: int, request: int) -> list[tuple[int, int, int, bool, int]]:
    """Batch rows evaluating ``tokens`` from ``position`` in ``stream``; logits wanted for the last only."""
    return [(t, position + j, stream, j == len(tokens) - 1, request) for j, t in enumerate(tokens)]


def _by_shared_prefix(prompts: dict[int, list[int]]) -> list[int]:
    """Requests in arrival order, except that those of one output in a batch holding several outputs are moved
    together, behind the first of them: each then starts from its neighbour's KV cells instead of evaluating its
    output's context again. A request joins the earlier one it shares the longest prefix with when that reaches
    ``SAME_OUTPUT`` tokens past the batch's common prefix (an output's own tokens); questions of one output that
    merely start alike share fewer and stay where they came."""
    order = list(prompts)
    common = len(common_prefix([prompts[i] for i in order]))
    groups: list[list[int]] = []
    for i in order:
        shared = [(len(common_prefix([prompts[g[0]], prompts[i]])), g) for g in groups]
        best = max(shared, key=lambda pair: pair[0], default=None)
        if best is not None and best[0] >= common + SAME_OUTPUT:
            best[1].append(i)
        else:
            groups.append([i])
    return [i for group in groups for i in group]


def _by_prompt(prompts: dict[int, list[int]]) -> list[int]:
    """Samples in arrival order, those of one prompt moved together behind the first of them (they share its
    prefill)."""
    first: dict[tuple[int, ...], int] = {}
    for i, tokens in prompts.items():
        first.setdefault(tuple(tokens), i)
    return sorted(prompts, key=lambda i: (first[tuple(prompts[i])], i))


def _contained(exc: BaseException) -> BaseException:
    """An exit raised while decoding (a user's word predicate or rule kind calling ``sys.exit``) as this request's
    failure: as with a verifier's exit (``verifiers.guard``), it never ends the run, least of all as a success."""
    if isinstance(exc, SystemExit | GeneratorExit):
        return RuntimeError(f"steering code raised {type(exc).__name__}({exc}) while decoding")
    return exc


def _outcome(work: Any) -> Any:
    try:
        return work()
    except Exception as exc:  # handed to the caller's thread, which raises it
        return exc
