"""Training suites composed the way Tulu 3's and IFBench's training data were: a writing task plus one to three
constraints drawn from the verifier registry, each stated by its own rule sentence, so every row is graded exactly
by the same code that grades the test suites.

Everything is drawn from one seeded ``random.Random``, so a seed gives the same file byte for byte. Constraints that
contradict each other are never drawn together (``GROUPS``, ``CONFLICTS``, ``SOLO``), and a candidate prompt that
equals or nearly duplicates a prompt of an excluded suite (the test split) is drawn again (``core.neardup.LeakIndex``): training
on the test items would make every later test score meaningless.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from itertools import combinations
from pathlib import Path
from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_jsonl, text_lines
from bineval_dspy.core.neardup import LEAK_THRESHOLD, LeakIndex
from bineval_dspy.suites.samplers import SAMPLERS
from bineval_dspy.verifiers import describe, known_instruction_ids

_QUOTES_PROMPT = "its kwargs quote the prompt itself (prompt_to_repeat), which a task-independent draw cannot know"
_FIXED_TASK = "a task of its own with one right answer, not a constraint that fits another task"
EXCLUDED: dict[str, str] = {
    "combination:repeat_prompt": _QUOTES_PROMPT,
    "repeat:repeat_change": _QUOTES_PROMPT,
    "repeat:repeat_span": _QUOTES_PROMPT,
    "ratio:overlap": "it needs a reference text in the prompt to overlap with",
    "count:person_names": "its rule points at a list of 50 names that only IFBench's own prompt spells out",
    "grounded:numbers": "it checks the response against an input document, which a writing task has none of",
    "grounded:entities": "it checks the response against an input document, which a writing task has none of",
    **{
        f"custom:{name}": _FIXED_TASK
        for name in (
            "character_reverse", "csv_city", "csv_quotes", "csv_special_character", "date_format_list",
            "european_capitals_sort", "mcq_count_length", "multiples", "reverse_newline", "sentence_alphabet",
            "word_reverse",
        )  # fmt: skip
    },
    **{
        f"check:{name}": "its kwargs (a pattern, a text, a schema, a length) are what a user's own task asks for; no draw would be one"
        for name in ("regex", "contains", "not_contains", "is_json", "json_schema", "starts_with", "ends_with", "max_chars")
    },
}

# Families by id prefix, for --ids: IFEval and IFBench ids share no prefix.
FAMILIES: dict[str, tuple[str, ...]] = {
    "ifeval": (
        "change_case", "combination", "detectable_content", "detectable_format", "keywords", "language",
        "length_constraints", "punctuation", "startend",
    ),  # fmt: skip
    "ifbench": ("count", "custom", "format", "ratio", "repeat", "sentence", "words"),
    "bineval": ("check", "grounded", "text"),
}


# --------------------------------------------------------------------------- conflicts
# Each group names one aspect of the response that its ids all constrain. A pair in CONFLICTS says no id of the
# first group may be drawn with an id of the second; a group paired with itself allows at most one of its ids.
GROUPS: dict[str, frozenset[str]] = {
    "letter case": frozenset({
        "change_case:english_lowercase", "change_case:english_capital", "change_case:capital_word_frequency",
        "format:title_case", "text:sentence_capitals",
    }),
    "language": frozenset({
        "change_case:english_lowercase", "change_case:english_capital", "language:response_language", "count:words_japanese",
    }),
    "other script": frozenset({"language:response_language", "count:words_japanese"}),
    # rules counting English words (pronouns, conjunctions, verbs, stop words): unmet in another script
    "english words": frozenset({"count:pronouns", "count:conjunctions", "words:start_verb", "ratio:stop_words"}),
    "word count": frozenset({
        "length_constraints:number_words", "count:word_count_range", "text:word_count", "count:unique_word_count",
    }),
    "sentence count": frozenset({
        "length_constraints:number_sentences", "text:sentence_count", "ratio:sentence_words", "sentence:keyword",
        "words:keywords_specific_position",
    }),
    "layout": frozenset({
        "detectable_format:json_format", "detectable_format:multiple_sections", "detectable_format:number_bullet_lists",
        "length_constraints:number_paragraphs", "length_constraints:nth_paragraph_first_word", "combination:two_responses",
        "format:newline", "format:line_indent", "format:no_bullets_bullets", "format:sub-bullets", "format:list",
        "format:output_template", "words:vowel", "words:paragraph_last_first",
    }),
    "ending": frozenset({
        "startend:end_checker", "detectable_content:postscript", "startend:quotation", "format:quote_unquote",
        "detectable_format:json_format", "format:emoji", "format:newline", "format:no_bullets_bullets",
        "words:paragraph_last_first", "words:words_position",
    }),
    "sentence endings": frozenset({"format:emoji", "ratio:sentence_balance", "ratio:sentence_type"}),
    "asterisks": frozenset({"format:sub-bullets", "detectable_format:number_highlighted_sections"}),
    "commas": frozenset({"punctuation:no_comma", "count:punctuation"}),
    "numerals": frozenset({"count:numbers", "detectable_format:multiple_sections"}),
    "repetition": frozenset({"words:repeats", "keywords:frequency", "count:keywords_multiple"}),
    "first word": frozenset({"words:start_verb", "length_constraints:nth_paragraph_first_word"}),
    # what the response must open with, so it cannot also open with a verb or a given word
    "opening markup": frozenset({
        "detectable_format:title", "startend:quotation", "detectable_format:json_format",
        "detectable_format:multiple_sections", "format:output_template", "detectable_format:number_bullet_lists",
        "format:thesis",
    }),
    # markup of fixed case ('Section 1', 'My Answer:', '<i>') that all-lowercase or all-capitals would break
    "cased markup": frozenset({"detectable_format:multiple_sections", "format:output_template", "format:thesis"}),
    # rules on the letters of every word, which a named word or another script would break
    "word shapes": frozenset({
        "words:alphabet", "words:consonants", "words:prime_lengths", "words:odd_even_syllables", "words:no_consecutive",
        "sentence:alliteration_increment", "words:vowel",
    }),
    # rules that put given words or phrases in the response
    "named words": frozenset({
        "keywords:existence", "keywords:frequency", "count:keywords_multiple", "sentence:keyword",
        "words:keywords_specific_position", "words:words_position", "length_constraints:nth_paragraph_first_word",
        "startend:end_checker", "detectable_content:postscript", "detectable_format:multiple_sections",
        "format:output_template",
    }),
}  # fmt: skip
CONFLICTS: frozenset[tuple[str, str]] = frozenset({
    *((group, group) for group in (
        "letter case", "language", "word count", "sentence count", "layout", "ending", "sentence endings", "asterisks",
        "commas", "numerals", "repetition", "first word", "word shapes",
    )),
    ("other script", "english words"),
    ("other script", "word shapes"),
    ("word shapes", "named words"),
    ("first word", "opening markup"),
    ("letter case", "cased markup"),
})  # fmt: skip
# Ids that fix the whole response (one set phrase, one option, no whitespace at all): drawn only on their own.
SOLO = frozenset({
    "detectable_format:constrained_response", "format:options", "repeat:repeat_simple", "format:no_whitespace",
})  # fmt: skip

_GROUPS_OF: dict[str, frozenset[str]] = {
    instruction_id: frozenset(name for name, members in GROUPS.items() if instruction_id in members)
    for instruction_id in SAMPLERS
}


def conflicting(first: str, second: str) -> bool:
    """Whether two instruction ids may not share a prompt: the same id twice, a solo id, or groups in CONFLICTS."""
    if first == second or first in SOLO or second in SOLO:
        return True
    groups = _GROUPS_OF.get(first, frozenset()), _GROUPS_OF.get(second, frozenset())
    return any((a, b) in CONFLICTS or (b, a) in CONFLICTS for a in groups[0] for b in groups[1])


# Kwargs naming words the response must hold or avoid: two instructions naming the same word would fight over it.
_WORD_KWARGS = frozenset({
    "keywords", "forbidden_words", "keyword", "keyword1", "keyword2", "keyword3", "keyword4", "keyword5", "word",
    "first_word", "end_phrase", "postscript_marker", "section_spliter",
})  # fmt: skip


def _named_words(kwargs: dict[str, Any]) -> set[str]:
    values = [kwargs[name] for name in _WORD_KWARGS & set(kwargs)]
    texts = [text for value in values for text in (value if isinstance(value, list) else [value])]
    return {word for text in texts for word in re.findall(r"[a-z]+", text.lower())}


def _same_word(a: str, b: str) -> bool:
    """Equal, or (for words of 4+ letters) one inside the other: keyword rules count substrings."""
    return a == b or (min(len(a), len(b)) >= 4 and (a in b or b in a))


def kwargs_clash(kwargs_list: Sequence[dict[str, Any]]) -> bool:
    """Whether drawn kwargs contradict across instructions: two of them name the same word (include 'harbor' but
    forbid it), or a word another one asks for holds a letter a "fewer than N" letter rule rations."""
    named = [_named_words(kwargs) for kwargs in kwargs_list]
    if any(_same_word(a, b) for one, two in combinations(named, 2) for a in one for b in two):
        return True
    rationed = {kwargs["letter"] for kwargs in kwargs_list if kwargs.get("let_relation") == "less than"}
    return any(letter in word for letter in rationed for words in named for word in words)


# --------------------------------------------------------------------------- which ids
def family_of(instruction_id: str) -> str:
    """'ifeval', 'ifbench' or 'bineval', by the id's prefix."""
    prefix = instruction_id.split(":")[0]
    return next(family for family, prefixes in FAMILIES.items() if prefix in prefixes)


def select_ids(spec: str | None) -> list[str]:
    """The sampled ids a ``--ids`` value names: comma-separated families (ifeval, ifbench, bineval), id prefixes
    (keywords, format) or whole ids (punctuation:no_comma); None names every sampled id."""
    if spec is None:
        return sorted(SAMPLERS)
    known = known_instruction_ids()
    chosen: set[str] = set()
    for item in (part.strip() for part in spec.split(",")):
        if item in FAMILIES:
            named = [i for i in known if family_of(i) == item]
        elif ":" in item:
            if item not in known:
                raise InputError(f"`ids`: unknown instruction id {item!r}; run `bineval verifiers` for all of them")
            named = [item]
        else:
            named = [i for i in known if i.split(":")[0] == item]
        if not named:
            families = ", ".join(FAMILIES)
            raise InputError(f"`ids`: {item!r} is no family ({families}), id prefix (such as keywords) or instruction id")
        sampled = [i for i in named if i in SAMPLERS]
        if not sampled:
            raise InputError(f"`ids`: {item!r} names no id that can be drawn ({named[0]}: {EXCLUDED[named[0]]})")
        chosen.update(sampled)
    return sorted(chosen)


# --------------------------------------------------------------------------- tasks and excluded prompts
def load_tasks(path: Path | None = None) -> list[str]:
    """Writing tasks: the bundled list, or a file with one task per line or JSON Lines with a ``task`` field."""
    if path is None:
        tasks: list[str] = json.loads(files("bineval_dspy").joinpath("data").joinpath("synth_tasks.json").read_text(encoding="utf-8"))
        return tasks
    lines = [line.removesuffix("\n") for _, line, _ in text_lines(path)]  # each line capped, as a JSON Lines row is
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise InputError(f"{path}: no tasks; give one task per line, or JSON Lines with a 'task' field")
    if path.suffix != ".jsonl" and not first.lstrip().startswith("{"):
        return [line.strip() for line in lines if line.strip()]
    tasks = []
    for number, obj in read_jsonl(path, required=("task",)):
        task = obj["task"]
        if not isinstance(task, str) or not task.strip():
            raise InputError(f"{path}:{number}: field 'task': expected non-empty text, got {task!r}")
        tasks.append(task.strip())
    return tasks


def read_excluded(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(key, prompt) of every row of the suites to keep out of training; the key is ``FILE:KEY`` (or the line)."""
    excluded = []
    for path in paths:
        for number, obj in read_jsonl(path, required=("prompt",)):
            if not isinstance(obj["prompt"], str):
                raise InputError(f"{path}:{number}: field 'prompt': expected text, got {type(obj['prompt']).__name__}")
            excluded.append((f"{path.name}:{obj.get('key', f'line {number}')}", obj["prompt"]))
    return excluded


# --------------------------------------------------------------------------- composing
_TRIES = 200  # draws of a compatible instruction set before the selection is declared too narrow
_REDRAWS = 1000  # draws of one row before its leaking candidates are declared the rule, not the exception


@dataclass(frozen=True)
class Synthesis:
    """The drawn suite rows and how many candidates were drawn again because they leaked an excluded prompt."""

    rows: list[dict[str, Any]]
    redrawn: int


def _draw_instructions(rng: random.Random, ids: Sequence[str], low: int, high: int) -> tuple[list[str], list[dict[str, Any]]]:
    """low..high compatible ids with their kwargs: a solo id only when one is wanted, no conflicting pair."""
    wanted = rng.randint(low, high)
    for _ in range(_TRIES):
        pool = [i for i in ids if wanted == 1 or i not in SOLO]
        chosen: list[str] = []
        while pool and len(chosen) < wanted:
            chosen.append(rng.choice(pool))
            pool = [i for i in pool if not conflicting(i, chosen[-1])]
        kwargs = [SAMPLERS[i](rng) for i in chosen]
        if len(chosen) >= low and not kwargs_clash(kwargs):
            return chosen, kwargs
    raise InputError(f"cannot draw {low} instructions that go together from the selected ids; select more (`ids`) or ask for fewer (`min_instructions`)")


def compose(task: str, rules: Sequence[str]) -> str:
    """The prompt: the task as a sentence, then each rule sentence."""
    task = task.strip()
    return " ".join([task if task.endswith((".", "?", "!")) else task + ".", *rules])


def synthesize(
    count: int,
    *,
    seed: int = 0,
    tasks: Sequence[str],
    ids: Sequence[str],
    min_instructions: int = 1,
    max_instructions: int = 3,
    excluded: Sequence[tuple[str, str]] = (),
    threshold: float = LEAK_THRESHOLD,
) -> Synthesis:
    """``count`` suite rows (``synth-0``, ...), each a task with min..max compatible instructions, none of whose
    prompt or task is within ``threshold`` of an excluded prompt; the same arguments give the same rows."""
    if not 1 <= min_instructions <= max_instructions:
        raise InputError(f"`min_instructions` ({min_instructions}) must be from 1 to `max_instructions` ({max_instructions})")
    if not 0 < threshold <= 1:
        raise InputError(f"`threshold`: must be above 0 and at most 1, got {threshold}")
    index = LeakIndex(excluded)

    def leaked(text: str) -> bool:
        return index.copied(text, threshold) is not None

    clean = {task for task in tasks if not leaked(task)}  # judged once; a leaking draw still counts as redrawn
    if not clean:
        raise InputError("every task matches an excluded prompt; give other tasks or a higher `threshold`")
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    redrawn = 0
    for number in range(count):
        for _ in range(_REDRAWS):
            task = rng.choice(tasks)
            chosen, kwargs = _draw_instructions(rng, ids, min_instructions, max_instructions)
            prompt = compose(task, [describe(i, k, task) for i, k in zip(chosen, kwargs)])
            if task in clean and not leaked(prompt):
                break
            redrawn += 1
        else:
            raise InputError(f"no prompt unlike the excluded ones in {_REDRAWS} draws; give other tasks or a higher `threshold`")
        rows.append({"key": f"synth-{number}", "prompt": prompt, "instruction_id_list": chosen, "kwargs": kwargs})
    return Synthesis(rows, redrawn)
