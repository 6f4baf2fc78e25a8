"""“All papers that…” list mode: the dev-set targets of issue 6, the bar's plain functions, the CLI."""

import json
import re

import numpy as np
import pytest

from assistant.relevance.listing import ListBar, bar_scores, relative

from assistant.research.lists import list_papers
from assistant.question.lists import question_topic
from assistant.relevance.judge import Verdict


@pytest.fixture(scope="module")
def multi(dev_questions):
    return [q for q in dev_questions if q["kind"] == "multi"]


@pytest.fixture(scope="module")
def results(assistant, multi):
    return {q["qid"]: list_papers(assistant, q["question"]) for q in multi}


def test_dev_multi_recall_and_precision_regression_gate(multi, results):
    """Regression gate on dev.jsonl's 10 'multi' questions, not a quality claim (the training questions hold
    no list with its every paper known; docs/quality.md gives the lists' figures on both)."""
    recall, precision = [], []
    for q in multi:
        got = [p.id for p in results[q["qid"]].papers]
        gold = set(q["gold"])
        hit = len(gold & set(got))
        recall.append(hit / len(gold))
        precision.append(hit / len(got) if got else 0.0)
    print(f"list mode on {len(multi)} multi questions: recall {np.mean(recall):.3f}, precision {np.mean(precision):.3f}")
    # The relevance model decides whether the topic is present (one of the 10, "co-design with the hardware", it
    # finds absent, here precision 0), the rules' bar who is listed: measured 2026-12-05 recall 0.708, precision
    # 0.875 with the bar fitted on the training corpus (0.70; at 0.76 0.675; the former bar, set on these
    # questions, 0.62: 0.87 recall).
    assert np.mean(recall) >= 0.70
    assert np.mean(precision) >= 0.85


def test_results_are_sorted_counted_and_evidenced(results):
    listed = [res for res in results.values() if res.count]
    assert len(listed) >= 9  # the model finds one topic absent (see above)
    for res in listed:
        assert res.count == len(res.papers) >= 1
        scores = [p.score for p in res.papers]  # each paper's own P(about the topic), best first
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
        assert [p.rank for p in res.papers] == list(range(1, res.count + 1))
        for p in res.papers:
            assert p.sentence is not None and p.sentence.text in p.paper.text
            share = res.bar.lexical_weight * p.lexical + (1 - res.bar.lexical_weight) * p.semantic
            assert share >= res.bar.relative_bar - 1e-6 and p.verdict != Verdict.none
            assert p.score == pytest.approx(p.relevance.probability)
        assert f"reaches {res.bar.relative_bar:.0%} of the best match's" in res.note and "may miss" in res.note


def test_off_topic_question_lists_nothing(assistant):
    res = list_papers(assistant, "Which papers improve protein structure prediction?")
    assert res.count == 0 and res.papers == []
    assert res.note.startswith("No indexed paper is about")


def test_question_topic_and_relative_scores():
    assert question_topic("Which papers study personality in large language models?") == \
        "study personality in large language models"
    assert question_topic("List all papers that use GRPO?") == "use GRPO"
    assert question_topic("diffusion speed-ups") == "diffusion speed-ups"
    assert relative([2.0, 1.0, 0.0]).tolist() == [1.0, 0.5, 0.0]
    assert relative([0.0, 0.0]).tolist() == [0.0, 0.0]
    score, lex, sem = bar_scores([4.0, 2.0], [0.5, 0.5])
    assert score.tolist() == [1.0, 0.75] and lex.tolist() == [1.0, 0.5] and sem.tolist() == [1.0, 1.0]
    assert ListBar() == ListBar(relative_bar=0.70, lexical_weight=0.5)  # fitted on title-phrase lists over corpus2k
    assert relative([3.0, -1.0]).tolist() == [1.0, 0.0] and relative([]).size == 0  # clipped to [0, 1]
    score, _, _ = bar_scores([4.0, 2.0], [0.5, 0.25], lexical_weight=0.25)  # 0.25 × lexical + 0.75 × semantic
    assert score.tolist() == [1.0, 0.5]


def test_cli_list_prints_the_count_it_lists(assistant, index_dir, multi, results, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from assistant import cli
    from assistant.answer import service

    # The CLI in-process, over the session's Assistant (its sentence cache is warm).
    monkeypatch.setattr(service, "get_assistant", lambda settings: assistant)
    runner = CliRunner()
    for q in [q for q in multi if results[q["qid"]].count][:4]:
        out = runner.invoke(cli.app, ["list", q["question"], "--index", str(index_dir)])
        assert out.exit_code == 0, out.output
        m = re.search(r"^Found (\d+) papers? matching", out.output, re.M)  # after "(Closest match …)" if weak
        listed = re.findall(r"^\s*\d+\. .+ \((\d{3}_[0-9a-f]+#\d+)\)  relevance", out.output, re.M)
        assert m and int(m.group(1)) == len(listed) >= 1
        assert "How the bar was set:" in out.output
    out = runner.invoke(cli.app, ["list", multi[0]["question"], "--index", str(index_dir), "--json",
                                  "--export", str(tmp_path / "l.md")])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["count"] == len(data["papers"]) and set(multi[0]["gold"]) <= {p["paper_id"] for p in data["papers"]}
    md = (tmp_path / "l.md").read_text()
    assert all(p["paper_id"] in md for p in data["papers"])


def test_a_list_whose_best_match_is_weak_says_so_like_the_chat(assistant):
    from assistant.research.lists import list_papers
    from assistant.faces.render import list_markdown, list_text

    question = "Which papers study LLM judges?"
    result = list_papers(assistant, question)
    ans = assistant.ask(question)
    assert result.weak and ans.verdict.value == "weak"
    assert list_text(result).startswith("(Closest match, may not answer the question.)")
    assert list_markdown(result).startswith("_Closest match, may not answer the question._")
    assert [s.paper_id for s in ans.sources] == [p.id for p in result.papers]  # the same papers both ways


def test_a_flat_list_in_the_chat_carries_list_modes_warning(assistant):
    from assistant.relevance.listing import LOOSE_NOTE
    from assistant.research.lists import list_papers

    question = "Which papers measure the carbon footprint of pretraining large language models?"
    # A configuration under which the shared words flatten the evidence: the list bar and the rules' thresholds
    # once set on dev (the defaults, fitted on the training corpus, list fewer papers here).
    rules = _rules(assistant, {"relative_bar": 0.62}, {"none_dense": 0.28, "none_sentence": 0.335, "weak_sum": 0.72})
    result, ans = list_papers(rules, question), rules.ask(question)
    assert result.loose and result.count > result.pool_size / 2  # every LLM paper shares the words
    assert LOOSE_NOTE in ans.note and LOOSE_NOTE in result.note and ans.count == result.count
    # The relevance model finds no paper about it: nothing listed, and the chat says so first.
    result, ans = list_papers(assistant, question), assistant.ask(question)
    assert result.count == 0 and ans.answer.startswith("No indexed paper is about “measure the carbon footprint")


def _rules(assistant, listing: dict | None = None, abstention: dict | None = None):
    from assistant.answer.pipeline import Assistant

    cal = assistant.settings.calibration
    return Assistant(assistant.settings.model_copy(update={"calibration": cal.model_copy(update={
        "relevance": cal.relevance.model_copy(update={"model": ""}),
        "listing": cal.listing.model_copy(update=listing or {}),
        "abstention": cal.abstention.model_copy(update=abstention or {})})}), assistant.index)
