"""The holistic 1-5 judge, G-Eval style: one call per dimension, the score weighted by the LM's probabilities.

G-Eval's point is that the expected score sum_k k * P(k) over the score tokens separates outputs the argmax ties
(a 135M model answers "4" to almost everything). When the LM returns logprobs, the score is that expectation,
read at the token of the score value; otherwise, or when that token cannot be read, the parsed integer.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

import dspy
from pydantic import BaseModel

from bineval_dspy.core.errors import one_line
from bineval_dspy.judges.logprobs import entry_field, value_token
from bineval_dspy.lm.cache import reply_journal

SCORES = ("1", "2", "3", "4", "5")
TOP_LOGPROBS = 10  # candidates asked for at each position: all five score tokens fit
# The JSON key of the score, then its value (an unquoted integer, optionally quoted by a lax LM). The last match
# is the score: nothing after it in the reply can be another one.
_SCORE_KEY = re.compile(r'"score"\s*:\s*"?')


class RateOutput(dspy.Signature):
    """You are a careful evaluator. Read the input and the output, then rate the output on the one dimension
    described, from 1 (very poor) to 5 (excellent). Judge only that dimension."""

    input: str = dspy.InputField(desc="the task input the output responds to")
    output: str = dspy.InputField(desc="the output being evaluated")
    dimension: str = dspy.InputField(desc="the dimension to rate and what it means")
    score: Literal[1, 2, 3, 4, 5] = dspy.OutputField(desc="1 (very poor) to 5 (excellent)")


class Rating(BaseModel):
    """One dimension's rating: the parsed 1-5 answer and, when logprobs allowed, the probability-weighted score."""

    parsed: int | None = None
    weighted: float | None = None
    error: str = ""  # why there is no score: the LM failed or gave no parseable answer

    @property
    def value(self) -> float | None:
        """The score used: the weighted one when known, else the parsed one; None when the LM gave neither."""
        return self.weighted if self.weighted is not None else (None if self.parsed is None else float(self.parsed))


def weighted_score(logprobs: Any) -> float | None:
    """sum_k k * P(k) / sum_k P(k) over the score tokens "1".."5" at the token of the last ``"score"`` value.

    Reads the raw top candidates there (plus the chosen token if the provider left it out of them), so " 4" and
    "4" add to one score. None when the reply has no such key, the token there is not a score, or no candidate is.
    """
    entry = value_token(logprobs, _SCORE_KEY)
    token = "" if entry is None else (entry_field(entry, "token") or "")
    if entry is None or _score_word(token) is None:
        return None
    candidates = list(entry_field(entry, "top_logprobs") or [])
    if token not in [entry_field(c, "token") for c in candidates]:
        candidates.append({"token": token, "logprob": entry_field(entry, "logprob")})
    return _expectation(candidates)


def _expectation(candidates: list[Any]) -> float | None:
    mass = dict.fromkeys(SCORES, 0.0)
    for cand in candidates:
        word = _score_word(entry_field(cand, "token") or "")
        logprob = entry_field(cand, "logprob")
        if word is not None and logprob is not None:
            mass[word] += math.exp(logprob)
    total = sum(mass.values())
    return sum(int(k) * p for k, p in mass.items()) / total if total > 0 else None


def _score_word(token: str) -> str | None:
    word = token.strip().strip('"').strip()
    return word if word in SCORES else None


class HolisticJudge(dspy.Module):
    """Rates an output from 1 to 5 on each dimension, one call per dimension (the definition goes in the prompt).

    ``probability`` asks for logprobs and weights the score by them (G-Eval); without it, the parsed integer.
    """

    def __init__(self, definitions: dict[str, str], *, probability: bool = True) -> None:
        super().__init__()
        self.definitions = definitions
        self.probability = probability
        self.rate = dspy.Predict(RateOutput)
        self.adapter = dspy.JSONAdapter()

    def forward(self, input: str, output: str) -> dict[str, Rating]:
        return {dim: self.rate_one(input, output, dim) for dim in self.definitions}

    def rate_one(self, input: str, output: str, dimension: str) -> Rating:
        """One dimension's rating; an LM error or unparseable answer is a Rating without a score, never a guess."""
        config: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if self.probability else {}
        described = f"{dimension}: {self.definitions[dimension]}"
        with reply_journal() as journal:
            try:
                with dspy.context(adapter=self.adapter):
                    pred = self.rate(input=input, output=output, dimension=described, config=config)
            except Exception as exc:  # any LM or parse failure leaves the dimension unscored (and nothing cached)
                return Rating(error=f"no usable answer: {one_line(exc)}")
            parsed = pred.score
            if parsed not in (1, 2, 3, 4, 5):
                journal.forget()  # parsed, yet no score: a rerun asks again
                return Rating(error=f"unparseable score {parsed!r}")
        weighted = weighted_score(getattr(pred, "logprobs", None)) if self.probability else None
        return Rating(parsed=int(parsed), weighted=weighted)
