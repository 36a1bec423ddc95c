"""How many of the constraints a prompt states the extractor finds, with the kwargs its verifier needs.

The extractor (``checklists.stated.extracted``) reads a prompt's own words for the code-checkable constraints it
states; a suite row's ``instruction_id_list`` and ``kwargs`` say which it states. Per file, per instruction id and
overall: recall (annotated ids found with kwargs on which the verifier behaves as on the row's own), id recall (found
at all) and precision (found ids the row annotates). Kwargs count as equal when the verifier would behave the same:
numbers by value (5.0 is 5), text with its whitespace collapsed and, where the verifier ignores case, its case folded,
keyword lists as sets, ``format:options`` by the choices it parses, ``repeat:repeat_span`` by the span it asks for.
Rows are also split by the parity of their key, so rules written while reading one half can be checked on the other.
A row that cannot be read is named (file, line, field) and stops the run: a silently skipped row would raise recall.

Usage: python experiments/extractor_recall.py DATA.jsonl [DATA.jsonl ...] [--limit N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bineval_dspy.checklists.stated import extracted

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "experiments" / "results" / "extractor_recall.json"
CASED = {"repeat:repeat_change", "ratio:overlap", "detectable_format:multiple_sections", "format:list"}  # verifiers that read case


def _text(value: str, cased: bool) -> str:
    collapsed = " ".join(value.split())
    return collapsed if cased else collapsed.casefold()


def _value(value: Any, cased: bool) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _text(value, cased)
    if isinstance(value, (list, tuple)):
        return sorted({_value(item, cased) for item in value})
    return value


def _options(options: str) -> tuple[bool, frozenset[str]]:
    """What ``format:options`` reads from its kwarg: lettered or not, and the choices (split as it splits them)."""
    lettered = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    separator = "/" if "/" in options else "or" if "or" in options else ","
    return lettered, frozenset(choice.strip().strip(".,;:!? ").lower() for choice in options.split(separator))


def same_behaviour(instruction_id: str, annotated: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether the verifier of ``instruction_id`` behaves the same on ``found`` kwargs as on the row's own."""
    want = {k: v for k, v in annotated.items() if v is not None}
    got = {k: v for k, v in found.items() if v is not None}
    if instruction_id == "format:options":
        return isinstance(got.get("options"), str) and _options(str(want.get("options", ""))) == _options(got["options"])
    if instruction_id == "repeat:repeat_span":
        def span(kw: Mapping[str, Any]) -> str | None:
            try:
                return _text(str(kw["prompt_to_repeat"])[int(kw["n_start"]) : int(kw["n_end"]) + 1], cased=False)
            except (KeyError, TypeError, ValueError):
                return None
        return span(want) is not None and span(want) == span(got)
    cased = instruction_id in CASED
    return set(want) == set(got) and all(_value(want[k], cased) == _value(got[k], cased) for k in want)


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL suite file, each with ``key``, ``prompt``, ``instruction_id_list`` and ``kwargs``."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            sys.exit(f"{path}:{number}: not JSON ({exc.msg})")
        for field, kind in (("prompt", str), ("instruction_id_list", list), ("kwargs", list)):
            if not isinstance(row.get(field), kind):
                sys.exit(f"{path}:{number}: field {field!r}: missing or not a {kind.__name__}")
        if len(row["kwargs"]) != len(row["instruction_id_list"]):
            sys.exit(f"{path}:{number}: field 'kwargs': {len(row['kwargs'])} entries for {len(row['instruction_id_list'])} ids")
        rows.append(row)
    return rows


def score_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row: per annotated id whether it was found and with which kwargs; the found ids it does not annotate."""
    found = extracted(row["prompt"])
    by_id = {instruction_id: kwargs for instruction_id, kwargs in found}
    stated = []
    for instruction_id, kwargs in zip(row["instruction_id_list"], row["kwargs"]):
        annotated = {k: v for k, v in (kwargs or {}).items() if v is not None}
        hit = instruction_id in by_id
        entry = {"id": instruction_id, "found": hit, "kwargs_ok": hit and same_behaviour(instruction_id, annotated, by_id[instruction_id])}
        if hit and not entry["kwargs_ok"]:
            entry["annotated_kwargs"], entry["found_kwargs"] = annotated, by_id[instruction_id]
        stated.append(entry)
    extra = [{"id": i, "kwargs": kw} for i, kw in found if i not in row["instruction_id_list"]]
    return {"key": str(row.get("key", "")), "stated": stated, "extra": extra}


def _parity(key: str) -> str:
    digits = re.sub(r"\D", "", key)
    return "odd" if digits and int(digits) % 2 else "even"


def summary(scored: list[dict[str, Any]]) -> dict[str, Any]:
    stated = [entry for row in scored for entry in row["stated"]]
    found = sum(entry["found"] for entry in stated)
    extra = sum(len(row["extra"]) for row in scored)
    ok = sum(entry["kwargs_ok"] for entry in stated)

    def share(part: int, whole: int) -> float:
        return part / whole if whole else math.nan

    return {"rows": len(scored), "stated": len(stated), "found": found, "kwargs_ok": ok, "extra": extra,
            "recall": share(ok, len(stated)), "id_recall": share(found, len(stated)), "precision": share(found, found + extra)}  # fmt: skip


def per_id(scored: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for row in scored:
        for entry in row["stated"]:
            table[entry["id"]].update(stated=1, found=int(entry["found"]), kwargs_ok=int(entry["kwargs_ok"]))
        for entry in row["extra"]:
            table[entry["id"]].update(extra=1)
    return {i: {k: table[i][k] for k in ("stated", "found", "kwargs_ok", "extra")} for i in sorted(table)}


def _cell(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="+", help="suite files (JSONL with instruction_id_list and kwargs)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N rows of each file (0: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    report: dict[str, Any] = {}
    for path in args.data:
        if not path.is_file():
            sys.exit(f"{path}: no such file")
        rows = load_rows(path)[: args.limit or None]
        scored = [score_row(row) for row in rows]
        halves = {half: summary([r for r in scored if _parity(r["key"]) == half]) for half in ("even", "odd")}
        report[path.name] = {"path": str(path), "overall": summary(scored), "by_key_parity": halves, "per_id": per_id(scored),
                             "misses": [r for r in scored if r["extra"] or not all(e["kwargs_ok"] for e in r["stated"])]}  # fmt: skip

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, result in report.items():
        print(f"\n### {name}\n")
        print("| rows | stated | recall (kwargs right) | id recall | precision | found, not stated |")
        print("| --- | --- | --- | --- | --- | --- |")
        for label, s in (("all", result["overall"]), *((f"{half} keys", s) for half, s in result["by_key_parity"].items())):
            print(f"| {label}: {s['rows']} | {s['stated']} | {_cell(s['recall'])} | {_cell(s['id_recall'])} | {_cell(s['precision'])} | {s['extra']} |")
        print("\n| instruction id | stated | found | kwargs right | found, not stated |")
        print("| --- | --- | --- | --- | --- |")
        for instruction_id, c in result["per_id"].items():
            print(f"| {instruction_id} | {c['stated']} | {c['found']} | {c['kwargs_ok']} | {c['extra']} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
