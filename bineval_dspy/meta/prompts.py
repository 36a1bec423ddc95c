"""The default wording of the baselines per kind of output: a definition per dimension for the holistic 1-5 judge,
one yes/no question per dimension for the UniEval-style judge. A run config can replace or add any of them."""

from __future__ import annotations

Genre = str  # "summary", "dialogue" or "instruction": which wording fits a dataset's outputs

DEFINITIONS: dict[Genre, dict[str, str]] = {
    "summary": {
        "coherence": "the summary is well structured and well organized; its sentences build on each other into a "
        "coherent account of the topic rather than a heap of related facts",
        "consistency": "every fact in the summary is supported by the article; it states nothing the article does not say",
        "fluency": "each sentence of the summary is well written: grammatical, correctly spelled and punctuated, easy to read",
        "relevance": "the summary keeps the important information of the article and leaves out redundant or minor details",
    },
    "dialogue": {
        "naturalness": "the response is something a person would naturally say at this point of the conversation",
        "coherence": "the response follows sensibly from the dialogue history and stays on its topic",
        "engagingness": "the response is interesting and informative and gives the other person something to reply to",
        "groundedness": "the response uses the knowledge fact correctly",
        "understandability": "the response can be understood in the context of the dialogue",
        "overall": "the overall quality of the response as the next turn of this conversation",
    },
    "instruction": {
        "overall": "the output follows every part of the instruction: its content, format, style and stated constraints",
        "Content": "the content of the output does what the instruction asks",
        "Format": "the output has the format the instruction asks for",
        "Style": "the output is written in the style or tone the instruction asks for",
        "Linguistic": "the output meets the instruction's requirements on wording, grammar and vocabulary",
        "Number": "the output meets every count the instruction states (items, words, sentences, paragraphs)",
    },
}

QUESTIONS: dict[Genre, dict[str, str]] = {
    "summary": {
        "coherence": "Is this a coherent summary of the article?",
        "consistency": "Is every claim of this summary consistent with the article?",
        "fluency": "Is this summary fluent, well-formed text?",
        "relevance": "Does this summary contain the most important information of the article?",
    },
    "dialogue": {
        "naturalness": "Is this a natural response in the dialogue?",
        "coherence": "Is this a coherent response given the dialogue history?",
        "engagingness": "Is this an engaging and informative response?",
        "groundedness": "Is this response consistent with the knowledge fact?",
        "understandability": "Is this an understandable response in the dialogue?",
        "overall": "Is this a good response to continue the dialogue?",
    },
    "instruction": {
        "overall": "Does the output follow every part of the instruction?",
        "Content": "Does the content of the output do what the instruction asks?",
        "Format": "Does the output have the format the instruction asks for?",
        "Style": "Is the output written in the style the instruction asks for?",
        "Linguistic": "Does the output meet the language requirements of the instruction?",
        "Number": "Does the output meet every count the instruction states?",
    },
}
