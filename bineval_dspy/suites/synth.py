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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from itertools import combinations
from pathlib import Path
from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_jsonl, text_lines
from bineval_dspy.core.neardup import LEAK_THRESHOLD, LeakIndex
from bineval_dspy.verifiers import describe, known_instruction_ids
from bineval_dspy.verifiers.kwargs import RELATIONS

Sampler = Callable[[random.Random], dict[str, Any]]

# --------------------------------------------------------------------------- word lists (ours)
# Content words hold none of the rare letters j, q, x, z (a "fewer than N 'z'" rule must stay satisfiable next to a
# keyword rule), and none is part of another (keyword counts are substring counts).
CONTENT_WORDS = (
    "anchor", "basket", "beacon", "blossom", "bramble", "candle", "canyon", "cinder", "cobalt", "compass",
    "dolphin", "elbow", "fabric", "falcon", "feather", "fossil", "garnet", "ginger", "glacier", "granite",
    "gravel", "hammock", "harbor", "harvest", "hilltop", "hollow", "island", "ivory", "kettle", "lagoon",
    "lantern", "ledger", "lemon", "mango", "maple", "marble", "meadow", "mirror", "nectar", "needle",
    "nutmeg", "olive", "orchard", "oyster", "parcel", "pebble", "pepper", "pillar", "raven", "ribbon",
    "rocket", "rosemary", "saddle", "saffron", "silver", "summit", "thistle", "thunder", "timber", "tundra",
    "tunnel", "umbrella", "valley", "velvet", "violet", "walnut", "willow",
)  # fmt: skip
FILLER_WORDS = (
    "very", "really", "basically", "actually", "literally", "amazing", "awesome", "nice", "stuff", "things",
    "simply", "totally", "definitely", "great", "good", "obviously", "quite", "lots", "maybe", "perhaps",
)  # fmt: skip
END_PHRASES = (
    "Thank you for reading.", "That is all for today.", "Let me know what you think.", "Those are my thoughts.",
    "Hope this helps.", "See you soon.", "Stay curious.", "Until we meet again.",
)  # fmt: skip
PARAGRAPH_OPENERS = ("today", "however", "first", "finally", "meanwhile", "overall", "still", "sometimes", "besides")
SECTION_MARKERS = ("Section", "Part", "Chapter", "Stage")
POSTSCRIPT_MARKERS = ("P.S.", "P.P.S")
LIST_MARKERS = ("->", "=>", ">>", "~>", "::")
ANSWER_OPTIONS = ("yes/no/maybe", "agree/disagree/unsure", "likely/unlikely", "true/false/partly true")
LANGUAGES = ("ar", "de", "el", "es", "fi", "fr", "hi", "id", "it", "ja", "ko", "nl", "pl", "pt", "ru", "sv", "sw", "tr", "uk", "vi")
COMMON_LETTERS = "etaoinsrhl"  # "at least N" of a letter: plentiful in any English text
RARE_LETTERS = "jqxz"  # "fewer than N" of a letter: avoidable in any English text


# --------------------------------------------------------------------------- samplers
def _nothing(rng: random.Random) -> dict[str, Any]:
    """An instruction without kwargs: nothing to draw."""
    return {}


def _capital_words(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"capital_relation": relation, "capital_frequency": rng.randint(3, 10) if relation == "less than" else rng.randint(2, 6)}


def _placeholders(rng: random.Random) -> dict[str, Any]:
    return {"num_placeholders": rng.randint(1, 4)}


def _postscript(rng: random.Random) -> dict[str, Any]:
    return {"postscript_marker": rng.choice(POSTSCRIPT_MARKERS)}


def _sections(rng: random.Random) -> dict[str, Any]:
    return {"section_spliter": rng.choice(SECTION_MARKERS), "num_sections": rng.randint(2, 5)}


def _bullets(rng: random.Random) -> dict[str, Any]:
    return {"num_bullets": rng.randint(2, 6)}


def _highlights(rng: random.Random) -> dict[str, Any]:
    return {"num_highlights": rng.randint(1, 4)}


def _keywords(rng: random.Random) -> dict[str, Any]:
    return {"keywords": rng.sample(CONTENT_WORDS, rng.randint(1, 3))}


def _forbidden(rng: random.Random) -> dict[str, Any]:
    return {"forbidden_words": rng.sample(FILLER_WORDS, rng.randint(1, 4))}


def _keyword_frequency(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"keyword": rng.choice(CONTENT_WORDS), "relation": relation, "frequency": rng.randint(2, 5) if relation == "at least" else rng.randint(2, 4)}


def _letter_frequency(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    if relation == "at least":
        return {"letter": rng.choice(COMMON_LETTERS), "let_relation": relation, "let_frequency": rng.randint(5, 30)}
    return {"letter": rng.choice(RARE_LETTERS), "let_relation": relation, "let_frequency": rng.randint(2, 6)}


def _language(rng: random.Random) -> dict[str, Any]:
    return {"language": rng.choice(LANGUAGES)}


def _nth_paragraph(rng: random.Random) -> dict[str, Any]:
    paragraphs = rng.randint(2, 5)
    return {"num_paragraphs": paragraphs, "nth_paragraph": rng.randint(1, paragraphs), "first_word": rng.choice(PARAGRAPH_OPENERS)}


def _paragraphs(rng: random.Random) -> dict[str, Any]:
    return {"num_paragraphs": rng.randint(2, 5)}


def _sentences(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"relation": relation, "num_sentences": rng.randint(3, 10) if relation == "at least" else rng.randint(4, 12)}


def _words(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"relation": relation, "num_words": rng.randrange(100, 451, 50) if relation == "at least" else rng.randrange(80, 301, 20)}


def _end_phrase(rng: random.Random) -> dict[str, Any]:
    return {"end_phrase": rng.choice(END_PHRASES)}


def _conjunctions(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(2, 5)}


def _keywords_multiple(rng: random.Random) -> dict[str, Any]:
    return {f"keyword{i}": word for i, word in enumerate(rng.sample(CONTENT_WORDS, 5), start=1)}


def _numbers(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(1, 8)}


def _pronouns(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(5, 25)}


def _unique_words(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randrange(30, 151, 10)}


def _word_range(rng: random.Random) -> dict[str, Any]:
    low = rng.randrange(40, 241, 10)
    return {"min_words": low, "max_words": low + rng.randrange(10, 61, 5)}


def _japanese(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(2, 8)}


def _list_marker(rng: random.Random) -> dict[str, Any]:
    return {"sep": rng.choice(LIST_MARKERS)}


def _options(rng: random.Random) -> dict[str, Any]:
    return {"options": rng.choice(ANSWER_OPTIONS)}


def _stop_words(rng: random.Random) -> dict[str, Any]:
    return {"percentage": rng.randrange(25, 51, 5)}


def _increment(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(1, 4)}


def _sentence_keyword(rng: random.Random) -> dict[str, Any]:
    return {"word": rng.choice(CONTENT_WORDS), "N": rng.randint(1, 5)}


def _keyword_position(rng: random.Random) -> dict[str, Any]:
    return {"keyword": rng.choice(CONTENT_WORDS), "n": rng.randint(1, 4), "m": rng.randint(1, 8)}


def _repeats(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(2, 5)}


def _second_words(rng: random.Random) -> dict[str, Any]:
    return {"keyword": rng.choice(CONTENT_WORDS)}


def _span(rng: random.Random, noun: str, low: tuple[int, int, int], high: tuple[int, int, int]) -> dict[str, Any]:
    """text:* counts: a minimum, a maximum, or both (each bound optional in those verifiers)."""
    shape = rng.choice(("min", "max", "both"))
    if shape == "max":
        return {f"max_{noun}": rng.randrange(*high)}
    minimum = rng.randrange(*low)
    return {f"min_{noun}": minimum} if shape == "min" else {f"min_{noun}": minimum, f"max_{noun}": minimum + rng.randrange(*high)}


def _text_words(rng: random.Random) -> dict[str, Any]:
    return _span(rng, "words", (50, 301, 25), (40, 201, 20))


def _text_sentences(rng: random.Random) -> dict[str, Any]:
    return _span(rng, "sentences", (2, 9, 1), (3, 11, 1))


SAMPLERS: dict[str, Sampler] = {
    # IFEval
    "change_case:capital_word_frequency": _capital_words,
    "change_case:english_capital": _nothing,
    "change_case:english_lowercase": _nothing,
    "combination:two_responses": _nothing,
    "detectable_content:number_placeholders": _placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:constrained_response": _nothing,
    "detectable_format:json_format": _nothing,
    "detectable_format:multiple_sections": _sections,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:number_highlighted_sections": _highlights,
    "detectable_format:title": _nothing,
    "keywords:existence": _keywords,
    "keywords:forbidden_words": _forbidden,
    "keywords:frequency": _keyword_frequency,
    "keywords:letter_frequency": _letter_frequency,
    "language:response_language": _language,
    "length_constraints:nth_paragraph_first_word": _nth_paragraph,
    "length_constraints:number_paragraphs": _paragraphs,
    "length_constraints:number_sentences": _sentences,
    "length_constraints:number_words": _words,
    "punctuation:no_comma": _nothing,
    "startend:end_checker": _end_phrase,
    "startend:quotation": _nothing,
    # IFBench
    "count:conjunctions": _conjunctions,
    "count:keywords_multiple": _keywords_multiple,
    "count:numbers": _numbers,
    "count:pronouns": _pronouns,
    "count:punctuation": _nothing,
    "count:unique_word_count": _unique_words,
    "count:word_count_range": _word_range,
    "count:words_japanese": _japanese,
    "format:emoji": _nothing,
    "format:line_indent": _nothing,
    "format:list": _list_marker,
    "format:newline": _nothing,
    "format:no_bullets_bullets": _nothing,
    "format:no_whitespace": _nothing,
    "format:options": _options,
    "format:output_template": _nothing,
    "format:parentheses": _nothing,
    "format:quote_unquote": _nothing,
    "format:quotes": _nothing,
    "format:sub-bullets": _nothing,
    "format:thesis": _nothing,
    "format:title_case": _nothing,
    "ratio:sentence_balance": _nothing,
    "ratio:sentence_type": _nothing,
    "ratio:sentence_words": _nothing,
    "ratio:stop_words": _stop_words,
    "repeat:repeat_simple": _nothing,
    "sentence:alliteration_increment": _nothing,
    "sentence:increment": _increment,
    "sentence:keyword": _sentence_keyword,
    "words:alphabet": _nothing,
    "words:consonants": _nothing,
    "words:keywords_specific_position": _keyword_position,
    "words:last_first": _nothing,
    "words:no_consecutive": _nothing,
    "words:odd_even_syllables": _nothing,
    "words:palindrome": _nothing,
    "words:paragraph_last_first": _nothing,
    "words:prime_lengths": _nothing,
    "words:repeats": _repeats,
    "words:start_verb": _nothing,
    "words:vowel": _nothing,
    "words:words_position": _second_words,
    # bineval's own
    "text:no_repeated_words": _nothing,
    "text:sentence_capitals": _nothing,
    "text:sentence_count": _text_sentences,
    "text:word_count": _text_words,
}

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
