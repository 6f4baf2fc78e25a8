"""Our hand-written training questions (data/train/written.jsonl) keep the rules they were written by:
each answerable question has one gold paper of corpus2k that the calibration questions (train.jsonl) do
not use as gold or near miss, so the cross-encoder never trains on a paper it is calibrated on; a concept
question shares no run of six words with its paper; a lookup's evidence is a sentence of its abstract,
verbatim (and the third batch's lookups describe their paper in no six words of it); and an absent topic's checked phrases occur in no title or abstract."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import ROOT, SHARED, needs_shared

WRITTEN = ROOT / "data" / "train" / "written.jsonl"
CORPUS = SHARED / "eval" / "train" / "corpus2k.jsonl"
CALIBRATION = SHARED / "eval" / "train" / "train.jsonl"
_WORD = re.compile(r"[a-z0-9]+")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _shares_six_words(question: str, text: str) -> bool:
    """True when ``question`` repeats a run of six words of ``text`` (lower-cased)."""
    words, asked = _WORD.findall(text), _WORD.findall(question.lower())
    runs = {tuple(words[i:i + 6]) for i in range(len(words) - 5)}
    return any(tuple(asked[i:i + 6]) in runs for i in range(len(asked) - 5))


def test_written_questions_keep_their_rules():
    needs_shared(CORPUS, CALIBRATION)
    corpus = {r["id"]: r for r in _lines(CORPUS)}
    held = {p for q in _lines(CALIBRATION) for p in (q.get("gold") or []) + (q.get("near") or [])}
    questions = _lines(WRITTEN)
    assert len({q["qid"] for q in questions}) == len(questions) == 614
    texts = {pid: (r["title"] + " " + r["abstract"]).lower() for pid, r in corpus.items()}
    said = set()  # every run of one to four words of any title or abstract: a phrase occurs as whole words
    for t in texts.values():
        w = _WORD.findall(t)
        said.update(tuple(w[i:i + n]) for n in range(1, 5) for i in range(len(w) - n + 1))
    problems = []
    for q in questions:
        gold = q["gold"]
        if q["kind"] == "none":
            for phrase in q.get("checked") or [] if "-w26" in q["qid"] else []:
                if tuple(_WORD.findall(phrase.lower())) in said:
                    problems.append(f"{q['qid']}: {phrase!r} occurs in a title or abstract")
            continue
        if len(gold) != 1 or gold[0] not in corpus or gold[0] in held:
            problems.append(f"{q['qid']}: gold {gold} is not one corpus2k paper outside the calibration questions")
            continue
        if q["kind"] == "concept":
            if _shares_six_words(q["question"], texts[gold[0]]):
                problems.append(f"{q['qid']}: shares six words in a row with its abstract")
        elif q["kind"] == "lookup":
            if q["evidence"] not in corpus[gold[0]]["abstract"]:
                problems.append(f"{q['qid']}: evidence is not verbatim")
            if "-w27" in q["qid"] and _shares_six_words(q["question"], texts[gold[0]]):
                problems.append(f"{q['qid']}: describes its paper in six words of the abstract")
    assert problems == []


CALIBRATION_WRITTEN = ROOT / "data" / "train" / "calibration.jsonl"


def test_calibration_questions_keep_their_rules():
    """data/train/calibration.jsonl: one gold paper each outside train.jsonl and written.jsonl (gold or near), none
    used twice; concept and lookup questions share no six words with their paper; lookup evidence verbatim;
    invented names in no title or abstract; absent topics' phrases in none as whole words; near misses name a paper."""
    needs_shared(CORPUS, CALIBRATION)
    corpus = {r["id"]: r for r in _lines(CORPUS)}
    used = {p for f in (CALIBRATION, WRITTEN) for q in _lines(f) for p in (q.get("gold") or []) + (q.get("near") or [])}
    questions = _lines(CALIBRATION_WRITTEN)
    kinds = [q["kind"] for q in questions]
    assert len({q["qid"] for q in questions}) == len(questions) == 230
    assert (kinds.count("concept"), kinds.count("lookup"), kinds.count("none")) == (80, 70, 80)
    texts = {pid: (r["title"] + " " + r["abstract"]) for pid, r in corpus.items()}
    lowered = " \n ".join(t.lower() for t in texts.values())
    said = set()
    for t in texts.values():
        w = _WORD.findall(t.lower())
        said.update(tuple(w[i:i + n]) for n in range(1, 5) for i in range(len(w) - n + 1))
    problems, papers = [], []
    for q in questions:
        if q["kind"] == "none":
            for phrase in q.get("checked") or []:
                if "-name-" in q["qid"] and phrase.lower() in lowered:
                    problems.append(f"{q['qid']}: the invented name {phrase!r} is in a title or abstract")
                if "-topic-" in q["qid"] and tuple(_WORD.findall(phrase.lower())) in said:
                    problems.append(f"{q['qid']}: {phrase!r} occurs in a title or abstract")
            if "-near-" in q["qid"] and (len(q["near"]) != 1 or q["near"][0] not in corpus):
                problems.append(f"{q['qid']}: a near miss names no corpus2k paper")
            papers += q.get("near") or []
            continue
        gold = q["gold"]
        if len(gold) != 1 or gold[0] not in corpus or gold[0] in used:
            problems.append(f"{q['qid']}: gold {gold} is not one corpus2k paper outside the other question files")
            continue
        papers += gold
        if _shares_six_words(q["question"], texts[gold[0]].lower()):
            problems.append(f"{q['qid']}: shares six words in a row with its abstract")
        if q["kind"] == "lookup" and q["evidence"] not in corpus[gold[0]]["abstract"]:
            problems.append(f"{q['qid']}: evidence is not verbatim")
    assert len(papers) == len(set(papers)), "a paper is used by two questions"
    assert problems == []
