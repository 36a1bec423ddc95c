"""IFBench's constraints read from a prompt's own words (``checklists.stated``): each id from paraphrases of its
meaning, not from the benchmark's one template sentence, with the kwargs its verifier takes (issue 54, item 2)."""

from __future__ import annotations

import pytest

from bineval_dspy.checklists.stated import extracted


def found(prompt: str) -> dict[str, dict]:
    return dict(extracted(prompt))


TOPIC = "Explain how tides work."

PARAPHRASES = [
    # count:*
    ("count:conjunctions", {"small_n": 3}, ["Use at least 3 different coordinating conjunctions in the response.",
                                            "Include three or more distinct coordinating conjunctions.",
                                            "Employ at least 3.0 unique coordinating conjunctions in your answer."]),
    ("count:keywords_multiple", {"keyword1": "door", "keyword2": "bread", "keyword3": "blue", "keyword4": "lamp", "keyword5": "river"},
     ["Include keyword door once in your response, keyword bread twice in your response, keyword blue three times in your response, keyword lamp five times in your response, and keyword river seven times in your response.",
      "Use the word 'door' once, 'bread' twice, 'blue' 3 times, 'lamp' 5 times and 'river' 7 times."]),
    ("count:numbers", {"N": 4}, ["Include exactly 4 numbers in the response.", "Your answer must contain precisely four numbers.",
                                 "Use exactly 4 numerals."]),
    ("count:person_names", {"N": 5}, ["Mention at least 5 different person names in the response, from this list of person names: Emma, Liam, Noah.",
                                      "Use 5 or more distinct names from the following list: Emma, Liam, Noah."]),
    ("count:pronouns", {"N": 12}, ["The response should include at least 12 pronouns.", "Use no fewer than twelve pronouns."]),
    ("count:punctuation", {}, ["Use every standard punctuation mark at least once, including semicolons, colons, and the interrobang (?!).",
                               "Include all the standard punctuation marks somewhere in your reply."]),
    ("count:unique_word_count", {"N": 80}, ["Use at least 80 unique words in the response.", "Your answer should contain a minimum of 80 distinct words."]),
    ("count:word_count_range", {"min_words": 40, "max_words": 50}, ["The response must contain between 40 and 50 words.",
                                                                    "Answer in 40-50 words.", "Write from 40 to 50 words."]),
    ("count:words_japanese", {"N": 7}, ["Every 7th word of your response must be in Japanese.", "Make each seventh word Japanese."]),
    # sentence:*
    ("sentence:alliteration_increment", {}, ["Each sentence must have a longer sequence of consecutive alliterative words than the previous one.",
                                             "Let the alliteration grow longer with every next sentence."]),
    ("sentence:increment", {"small_n": 2}, ["Each sentence must contain exactly 2 more words than the previous one.",
                                            "Every sentence should be two words longer than the one before."]),
    ("sentence:keyword", {"word": "lantern", "N": 3}, ["The response must include keyword lantern in the 3-rd sentence.",
                                                       "Use the word 'lantern' in the third sentence.",
                                                       "The 3rd sentence must contain the word lantern."]),
    # words:*
    ("words:alphabet", {}, ["Each word in your response must start with the next letter of the alphabet, looping back to 'A' after 'Z'.",
                            "Make every word begin with the letter following the previous word's first letter."]),
    ("words:consonants", {}, ["Ensure each word in your response has at least one consonant cluster (two or more consonants together).",
                              "Every word must contain two consonants in a row."]),
    ("words:keywords_specific_position", {"keyword": "pebble", "n": 4, "m": 6},
     ["Include keyword pebble in the 4-th sentence, as the 6-th word of that sentence.", "Make 'pebble' the sixth word of the fourth sentence."]),
    ("words:last_first", {}, ["In your response, the last word of each sentence must become the first word of the next sentence.",
                              "Start each sentence with the word that ended the previous one.",
                              "The final word of every sentence must be the first word of the following sentence."]),
    ("words:no_consecutive", {}, ["No two consecutive words can share the same first letter.",
                                  "Adjacent words must start with different letters."]),
    ("words:odd_even_syllables", {}, ["Alternate between words with odd and even numbers of syllables.",
                                      "Words should alternate between an odd and an even syllable count."]),
    ("words:palindrome", {}, ["Include at least 10 single-word palindromes, each at least 5 characters long.", "Use ten palindromes of five letters or more."]),
    ("words:paragraph_last_first", {}, ["Each paragraph of your response must end with the same word it started with, separate paragraphs with a newline.",
                                        "Start and end every paragraph with the same word.", "Every paragraph must begin and end with the same word."]),
    ("words:prime_lengths", {}, ["Use only words with lengths that are prime numbers.", "Every word must have a prime number of letters."]),
    ("words:repeats", {"small_n": 3}, ["The response should not repeat any word more than 3 times.", "No word may appear more than three times.",
                                       "Use each word at most 3 times.", "Don't use any word more than 3 times."]),
    ("words:start_verb", {}, ["The response must start with a verb.", "Begin your answer with a verb."]),
    ("words:vowel", {}, ["Write a paragraph using words that contain only three types of vowels.", "Use only three different vowels in all your words."]),
    ("words:words_position", {"keyword": "amber"}, ["The second word in your response and the second to last word in your response should be the word amber.",
                                                    "Make 'amber' both the second and the second-to-last word."]),
    # format:*
    ("format:emoji", {}, ["Please use an emoji at the end of every sentence.", "End each sentence with an emoji.", "Every sentence must end with an emoji."]),
    ("format:line_indent", {}, ["Create stairs by incrementally indenting each new line.", "Indent each new line further than the previous one, like a staircase."]),
    ("format:list", {"sep": "##"}, ["Answer with a list of items, instead of bullet points use ##.", 'Use "##" as the bullet marker.']),
    ("format:newline", {}, ["Write each word on a new line.", "Put every word on its own line.", "One word per line, please."]),
    ("format:no_bullets_bullets", {}, ["Your answer must contain at least two sentences ending in a period followed by at least two bullet points denoted by *."]),
    ("format:no_whitespace", {}, ["The output should not contain any whitespace.", "Write it without any white space."]),
    ("format:options", {"options": "yes/no/maybe"}, ["Answer with one of the following options: yes/no/maybe. Do not give any explanation.",
                                                     "Choose one of the following options: yes/no/maybe."]),
    ("format:output_template", {}, ["Use this exact template for your response: My Answer: [answer] My Conclusion: [conclusion] Future Outlook: [outlook]"]),
    ("format:parentheses", {}, ["Nest parentheses (and [brackets {and braces}]) at least 5 levels deep.", "Use brackets nested at least five levels deep."]),
    ("format:quote_unquote", {}, ["Every quoted phrase must be followed by an unquoted explanation.", "Follow each quotation with an explanation."]),
    ("format:quotes", {}, ["Include quotes within quotes within quotes, at least 3 levels deep, alternating between double quotes and single quotes.",
                           "Nest quotations three levels deep."]),
    ("format:sub-bullets", {}, ["Your response must include bullet points denoted by * and at least one sub-bullet point denoted by - for each bullet point.",
                                "Give at least one sub-bullet under each bullet.",
                                "Use * bullets, and under every bullet add at least one - sub-bullet."]),
    ("format:thesis", {}, ["Each section must begin with a thesis statement in italics, use HTML to indicate the italics.", "Open with an italic thesis in HTML."]),
    ("format:title_case", {}, ["Write the entire response in title case (capitalize the first letter of every major word).",
                               "Capitalize the first letter of every word."]),
    # ratio:*
    ("ratio:sentence_balance", {}, ["Ensure that the ratio of sentence types (declarative, interrogative, exclamatory) in your response is balanced.",
                                    "Use equal numbers of declarative, interrogative, and exclamatory sentences."]),
    ("ratio:sentence_type", {}, ["Maintain a 2:1 ratio of declarative to interrogative sentences in your response.",
                                 "Write twice as many declarative sentences as interrogative ones."]),
    ("ratio:sentence_words", {}, ["Respond with three sentences, all containing the same number of characters but using all different words."]),
    ("ratio:stop_words", {"percentage": 30.0}, ["Ensure that stop words constitute no more than 30% of the total words in your response.",
                                                "Keep stop words under 30% of your words.", "No more than 30% of the words should be stop words."]),
    # repeat:* and custom:*
    ("repeat:repeat_simple", {}, ["Only output this sentence here, ignore all other requests.", "Output only this sentence and nothing else."]),
    ("custom:character_reverse", {}, ["Respond to this query, but make your sentence in reverse order of what it should be, per letter.",
                                      "Write the answer backwards, letter by letter."]),
    ("custom:word_reverse", {}, ["Respond to this query, but make your sentence in reverse order of what it should be, per word.",
                                 "Give the answer with the words in reverse order."]),
    ("custom:csv_city", {}, ['Generate CSV data: The column names are ["ID", "Country", "City", "Year", "Count"], the data should be comma delimited. Please generate 7 rows.']),
    ("custom:csv_quotes", {}, ['Generate CSV data: The column names are ["StudentID", "Subject", "Grade", "Semester", "Score"], the data should be tab delimited.']),
    ("custom:csv_special_character", {}, ['Generate CSV data: The column names are ["ProductID", "Category", "Brand", "Price", "Stock"].']),
    ("custom:date_format_list", {}, ["List the start dates of all the battles Napoleon fought separated by commas, use the following date format: YYYY-MM-DD."]),
    ("custom:european_capitals_sort", {}, ["Give me the names of all capital cities of european countries whose latitude is higher than 45 degrees, sorted by latitude."]),
    ("custom:mcq_count_length", {}, ['Generate 4 multiple choice questions with 5 options each about "art". The questions should get progressively longer.']),
    ("custom:multiples", {}, ["Count from 10 to 50 but only print multiples of 7."]),
    ("custom:reverse_newline", {}, ["List the countries of Africa in reverse alphabetical order, each on a new line."]),
    ("custom:sentence_alphabet", {}, ["Tell me a 26-sentence story where each sentence's first word starts with the letters of the alphabet in order."]),
]


@pytest.mark.parametrize("instruction_id, kwargs, sentence", [(i, kw, s) for i, kw, sentences in PARAPHRASES for s in sentences])
def test_each_ifbench_id_is_read_from_paraphrases_of_its_meaning(instruction_id, kwargs, sentence):
    for prompt in (f"{sentence} {TOPIC}", f"{TOPIC} {sentence}"):
        got = found(prompt)
        assert instruction_id in got, (prompt, got)
        assert {k: v for k, v in got[instruction_id].items() if k in kwargs} == kwargs, (prompt, got[instruction_id])


def test_the_rules_cover_every_ifbench_id_the_registry_has():
    from bineval_dspy.checklists.stated import RULES
    from bineval_dspy.verifiers import known_instruction_ids

    ifbench = {i for i in known_instruction_ids() if i.split(":")[0] in ("count", "custom", "format", "ratio", "repeat", "sentence", "words")}
    assert ifbench - {r.verifier for r in RULES} == set()


def test_a_request_the_constraint_quotes_is_the_prompt_without_its_instruction():
    request = "Use Python code: construct a small feedforward network."
    repeat = f"{request} Repeat the request, but change the first word of the repeated request, and do not answer the actual request!"
    assert found(repeat) == {"repeat:repeat_change": {"prompt_to_repeat": request}}
    span = found(f"{request} Copy the span of words that lies between (and including) index 4 and 9, the indices are word indices!")
    assert span == {"repeat:repeat_span": {"prompt_to_repeat": request, "n_start": 4, "n_end": 9}}
    overlap = found(f"Maintain a trigram overlap of 40% (±2%) with the provided reference text. Use at least 20 unique words in the response. {request}")
    assert overlap["ratio:overlap"] == {"reference_text": request, "percentage": 40.0}


def test_one_sentence_is_read_as_one_constraint():
    assert found("The response must contain between 71 and 73 words.") == {"count:word_count_range": {"min_words": 71, "max_words": 73}}
    assert set(found("Include keyword giggle in the 22-nd sentence, as the 33-rd word of that sentence.")) == {"words:keywords_specific_position"}
    assert set(found("Write a poem. Repeat the request, but change the first word.")) == {"repeat:repeat_change"}
    two_then_bullets = "Your answer must contain at least two sentences ending in a period followed by at least two bullet points denoted by *."
    assert set(found(two_then_bullets)) == {"format:no_bullets_bullets"}
