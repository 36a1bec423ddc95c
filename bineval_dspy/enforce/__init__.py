"""Constraints made true while decoding: the spec a prompt's code-checkable constraints compile to
(``steering``), each prompt's decisions (``plan``), and the spec executed token by token (``runtime``).

The compiler itself reads the verifier registry, where each enforceable verifier declares how
(``verifiers.enforcement.compile_plan``); engines execute the spec in their own form. The building blocks are
public, so a user's verifier file steers with them too: a word predicate of one's own (``@word_predicate``, used
as ``words(name, **params)``), or a rule kind (``RuleKind`` registered with ``@rule_kind``)."""

from bineval_dspy.enforce.kinds.words import WordPredicate, word_predicate, words
from bineval_dspy.enforce.plan import Decision, Plan, Source
from bineval_dspy.enforce.rules import RULE_KINDS, Reply, Rule, RuleConflict, RuleKind, rule_kind, rules
from bineval_dspy.enforce.steering import (
    METADATA_KEY,
    Conflict,
    Steering,
    Structure,
    code_digest,
    from_metadata,
    merge,
    metadata,
)

__all__ = [
    "METADATA_KEY",
    "Conflict",
    "Decision",
    "RULE_KINDS",
    "Reply",
    "Rule",
    "RuleConflict",
    "RuleKind",
    "Plan",
    "Source",
    "Steering",
    "Structure",
    "WordPredicate",
    "code_digest",
    "from_metadata",
    "merge",
    "metadata",
    "rule_kind",
    "rules",
    "word_predicate",
    "words",
]
