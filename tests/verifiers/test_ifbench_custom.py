"""Unit tests for the IFBench ``custom:*`` verifiers."""

from __future__ import annotations

import string

import bineval_dspy.verifiers.ifbench_custom as custom
from bineval_dspy.verifiers import build_check


def passes(instruction_id: str, response: str) -> bool:
    return build_check(instruction_id, {})(response).passed


def test_character_reverse() -> None:
    assert passes("custom:character_reverse", ".ELGAE DLAB ehT") is True
    assert passes("custom:character_reverse", "The bald eagle.") is False
    assert passes("custom:character_reverse", "elgaedlab") is False


def test_csv_city() -> None:
    rows = "\n".join(f"{i},France,Paris,2020,{i * 10}" for i in range(1, 8))
    assert passes("custom:csv_city", "ID,Country,City,Year,Count\n" + rows) is True
    assert passes("custom:csv_city", "ID,Country,City,Year,Count\n" + rows + "\n8,Peru,Lima,2021,3") is False
    assert passes("custom:csv_city", "ID, Country, City, Year, Count\n" + rows) is False  # spaces alter the header
    assert passes("custom:csv_city", "ID,Country,City,Year,Count\n" + rows.replace("Paris", '"Paris, TX"')) is True


def test_csv_quotes() -> None:
    header = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"'
    row = '"S1"\t"Math"\t"A"\t"Fall"\t"95"'
    assert passes("custom:csv_quotes", "\n".join([header, row, row, row])) is True
    assert passes("custom:csv_quotes", "\n".join([header, row, row])) is False
    assert passes("custom:csv_quotes", "\n".join([header, row, row, row.replace('"95"', "95")])) is False
    assert passes("custom:csv_quotes", "\n".join([header.replace("\t", ","), row, row, row])) is False
    assert passes("custom:csv_quotes", "\n".join([header, row, row, row.replace('"95"', "")])) is False


def test_csv_special_character() -> None:
    header = "ProductID,Category,Brand,Price,Stock"
    plain = "\n".join(f"P{i},Tools,Acme,9.99,{i}" for i in range(1, 14))
    assert passes("custom:csv_special_character", f'{header}\n{plain}\nP14,Tools,"Acme & Co",5,1') is True
    assert passes("custom:csv_special_character", f"{header}\n{plain}\nP14,Tools,Acme & Co,5,1") is False
    assert passes("custom:csv_special_character", f'{header}\n{plain}\nP14,Tools,"Acme Co",5,1') is False
    assert passes("custom:csv_special_character", f'{header}\n{plain}\nP14,Tools,"Acme & Co",5,1\nP15,x,y,1,1') is False


def test_date_format_list() -> None:
    assert passes("custom:date_format_list", "1796-04-12, 1805-12-02,1815-06-18") is True
    assert passes("custom:date_format_list", "1796-04-12, 1805-12-02.") is False
    assert passes("custom:date_format_list", "1822-01-01") is False  # after Napoleon's death
    assert passes("custom:date_format_list", "1805-02-30") is False
    assert passes("custom:date_format_list", "1805-4-1") is False
    assert passes("custom:date_format_list", "Battles: 1805-12-02") is False


def test_european_capitals_sort() -> None:
    capitals = list(custom._NORTHERN_CAPITALS)
    assert passes("custom:european_capitals_sort", ", ".join(capitals)) is True
    assert passes("custom:european_capitals_sort", ", ".join(capitals).replace("Reykjavik", "Reykjavík")) is True
    assert passes("custom:european_capitals_sort", ", ".join(capitals[1:])) is False
    capitals[0], capitals[1] = capitals[1], capitals[0]
    assert passes("custom:european_capitals_sort", ", ".join(capitals)) is False


def _mcq(stems: list[str], label: str = "Question {n}:") -> str:
    options = "\nA) one\nB) two\nC) three\nD) four\nE) five\n"
    return "\n".join(label.format(n=n) + " " + stem + options for n, stem in enumerate(stems, start=1))


def test_mcq_count_length() -> None:
    stems = ["Who?", "Who painted it?", "Who painted the scream?", "Which artist painted the scream in 1893?"]
    assert passes("custom:mcq_count_length", _mcq(stems)) is True
    assert passes("custom:mcq_count_length", _mcq(stems[::-1])) is False  # getting shorter
    assert passes("custom:mcq_count_length", _mcq(stems[:3])) is False
    assert passes("custom:mcq_count_length", "Sure!\n" + _mcq(stems)) is False  # text before the first question
    assert passes("custom:mcq_count_length", _mcq(stems, label="Question:")) is False  # labels need a number


def test_multiples() -> None:
    assert passes("custom:multiples", "14, 21, 28, 35, 42, 49") is True
    assert passes("custom:multiples", "14\n21\n28\n35\n42\n49") is True
    assert passes("custom:multiples", "Multiples of 7 from 10 to 50: 14, 21, 28, 35, 42, 49") is False
    assert passes("custom:multiples", "7, 14, 21, 28, 35, 42, 49") is False


def _countries(count: int) -> str:
    names = sorted((f"Country{i:02d}" for i in range(count)), reverse=True)
    return "\n".join(["Zimbabwe", "Zambia", *names])


def test_reverse_newline() -> None:
    assert passes("custom:reverse_newline", _countries(50)) is True  # 52 lines from Zimbabwe on
    assert passes("custom:reverse_newline", _countries(49)) is False
    assert passes("custom:reverse_newline", "Here is the list:\n\n" + _countries(50).replace("\n", ".\n")) is True
    assert passes("custom:reverse_newline", _countries(50).replace("Zambia", "Algeria")) is False


def _story(letters: str, end: str = ". ") -> str:
    return end.join(f"{letter.upper()}word comes next" for letter in letters) + "."


def test_sentence_alphabet() -> None:
    assert passes("custom:sentence_alphabet", _story(string.ascii_lowercase)) is True
    assert passes("custom:sentence_alphabet", _story(string.ascii_lowercase[:25])) is False
    assert passes("custom:sentence_alphabet", _story("b" + string.ascii_lowercase[1:])) is False
    # a line break does not end a sentence
    assert passes("custom:sentence_alphabet", _story(string.ascii_lowercase, end="\n")) is False


def test_word_reverse() -> None:
    assert passes("custom:word_reverse", "eagle. bald the is symbol national The") is True
    assert passes("custom:word_reverse", "The national symbol is the bald eagle.") is False
    assert passes("custom:word_reverse", "Eagle\nBald!") is True
