"""The abstract-only caveat: the question analysis (Question.beyond_abstracts, assistant.question.analysis) on a
table of questions, and the caveat's text (assistant.answer.generate.caveat_text)."""

import json

import pytest

from assistant.answer.generate import caveat_text
from assistant.question.analysis import analyze
from tests.conftest import DEV, SHARED, needs_shared

CASES = [
    ("What learning rate did OmniMoE use?", "exact hyper-parameters"),
    ("Which optimizer does SyPE train with?", "exact hyper-parameters"),
    ("What batch size was used to train VLA?", "exact hyper-parameters"),
    ("What are the hyperparameters of MapGR?", "exact hyper-parameters"),
    ("how many epochs did they train for", "exact hyper-parameters"),
    ("What is the value of the learning rate in PsumQuant?", "exact hyper-parameters"),
    ("What was the dropout rate in VLA?", "exact hyper-parameters"),
    ("What is the learning rate of MapGR?", "exact hyper-parameters"),
    ("What dropout did SyPE use?", "exact hyper-parameters"),
    ("How many GPUs did they train on?", "exact training details"),
    ("What are the training details of OmniMoE?", "exact training details"),
    ("How long did it take to train LightningRL?", "exact training details"),
    ("Give me the proof of Theorem 2 in the U2A paper", "proofs"),
    ("How does SyPE prove stability?", "proofs"),
    ("Walk me through the derivation of the bound", "proofs"),
    ("What are the values in Table 3 of OmniMoE?", "table values"),
    ("What exact accuracy does PsumQuant get on ImageNet?", "table values"),
    ("Show me the per-dataset results of VLA", "table values"),
    ("Show me the pseudocode of LightningRL", "code details"),
    ("How is CacheEdit implemented?", "code details"),
    ("Which library did they use for MapGR?", "code details"),
    ("Who are the authors of OmniMoE?", "author names"),
    ("Who wrote Tiny Experts?", "author names"),
    ("Which lab proposed SyPE?", "author names"),
    ("What about its limitations?", "the method's own limitations"),
    ("What are the limitations of OmniMoE?", "the method's own limitations"),
    # Abstracts answer these: no caveat.
    ("Which limitation of existing methods does OmniMoE address?", None),
    ("What are the limitations of prior positional encodings?", None),
    ("Do the authors of OmniMoE compare to PEER?", None),
    ("Who benefits from CacheEdit?", None),
    ("What is OmniMoE?", None),
    ("What is dropout?", None),  # a definition: abstracts say what things are
    ("What is weight decay?", None),
    ("What are hyperparameters?", None),
    ("What is an optimizer?", None),
    ("How much faster is OmniMoE than PEER?", None),
    ("Which papers study learning rate schedules?", None),  # a list question: which papers, not details
    ("Which papers give proofs of convergence?", None),
    ("What is the proof-of-concept in VLA?", None),
    ("How does the method improve proof search?", None),
    ("Which papers release code?", None),
    ("Is the code of OmniMoE available?", None),
    ("Which papers study table understanding?", None),
    ("", None),
]


@pytest.mark.parametrize("question, kind", CASES)
def test_kind_of_detail_the_question_asks_for(question, kind):
    assert analyze(question).beyond_abstracts == kind


def test_fires_on_no_dev_or_training_question():
    """Every dev and training question is answerable from abstracts: the caveat must stay silent."""
    files = [DEV, SHARED / "eval" / "train" / "train.jsonl"]
    needs_shared(*files)
    questions = [json.loads(line)["question"] for f in files for line in f.read_text().splitlines() if line.strip()]
    assert len(questions) >= 300  # 68 dev + 251 training questions
    assert [q for q in questions if analyze(q).beyond_abstracts] == []


def test_caveat_points_to_the_cited_papers():
    one = caveat_text("exact hyper-parameters", [(1, "OmniMoE")])
    assert one == ("Abstracts rarely give exact hyper-parameters: this answer is limited to what the abstracts say. "
                   "For them, see the full text of the cited paper: [1] OmniMoE.")
    two = caveat_text("proofs", [(1, "SyPE"), (2, "U2A")])
    assert two.endswith("see the full text of the cited papers: [1] SyPE; [2] U2A.")
    assert caveat_text("table values", []).endswith("The full papers, not their abstracts, would give them.")


def test_an_author_question_gets_the_names_the_paper_records_hold():
    named = caveat_text("author names", [(1, "Tiny Experts"), (2, "SyPE")], {1: ["A. Lovelace", "C. Babbage"], 2: []})
    assert named.endswith("The paper records name them: [1] Tiny Experts: A. Lovelace, C. Babbage.")
    assert caveat_text("author names", [(1, "SyPE")], {1: []}).endswith("see the full text of the cited paper: [1] SyPE.")
