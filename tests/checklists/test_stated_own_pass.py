"""The extractor on hostile prompts (issue 55, fifth pass's own probes): a count of thousands of digits is no
traceback, and a long count is read exactly (a float rounded 23 digits to another number)."""

from __future__ import annotations

from bineval_dspy.checklists.stated import number, stated_constraints


def test_a_count_of_thousands_of_digits_is_passed_over_not_a_traceback():
    # before: OverflowError (int(float('9' * 200000))) out of stated_constraints, so out of `generate --enforce extracted`
    assert stated_constraints("Write at least " + "9" * 200_000 + " words. Do not use any commas.") == [
        q for q in stated_constraints("Do not use any commas.")
    ]


def test_a_long_count_is_read_exactly():
    assert number("99999999999999999999999") == 99999999999999999999999  # before: 99999999999999991611392
    assert number("300.0") == 300
