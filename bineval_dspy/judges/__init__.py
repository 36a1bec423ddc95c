"""Judges: the ``Judge`` protocol, ``BinaryJudge`` (code routing in front of a per-question, batch or probe kind),
logprob reading, code routing."""

from bineval_dspy.judges.base import CodeRouter, Judge
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.code import check_verifiers, make_code_router
from bineval_dspy.judges.logprobs import p_yes_from_logprobs

__all__ = ["BinaryJudge", "CodeRouter", "Judge", "check_verifiers", "make_code_router", "p_yes_from_logprobs"]
