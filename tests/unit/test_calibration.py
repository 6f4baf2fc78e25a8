"""Every tuned number sits in Settings.calibration with a description and a source."""

from assistant.settings import Calibration, calibration_table, load_settings


def test_every_calibrated_number_has_a_description_and_a_source():
    rows = calibration_table()
    assert len(rows) >= 35
    for name, _value, description, source in rows:
        assert description.strip(), name
        assert source.strip(), name


class _NoIndex:
    """What Assistant.__init__ touches of an index, without a model or a store (nothing is retrieved here)."""

    encoder = store = None

    def chunker(self):
        return object()


class _Relevance:
    """Stands in for the relevance model file: only its cutoffs are read when the Assistant is made."""

    cutoffs = {"answered": 0.5, "weak": 0.2, "veto": 0.45, "topic": 0.6}


def _evidence(dense: float, sentence: float, coverage: float = 0.0, probability: float | None = None):
    from assistant.evidence import RelevanceEvidence

    return RelevanceEvidence(dense=dense, sentence=sentence, bm25=1.0, named_hit=False, coverage=coverage,
                             probability=probability)


def test_the_answer_path_reads_its_numbers_from_the_calibration(monkeypatch):
    """A threshold changed in the settings (here through the environment, as a user changes it) is the one the
    Assistant's judges decide with, the rules' and the relevance model's alike; a paper whose evidence sits
    between the default and the changed threshold gets another verdict."""
    import assistant.answer.pipeline as pipeline
    from assistant.answer.pipeline import Assistant
    from assistant.relevance.judge import AbstentionRule, CrossEncoderJudge
    from assistant.types import Verdict

    between = _evidence(dense=0.50, sentence=0.50)  # answered by the default rules: 1.0 ≥ weak_sum 0.98
    assert AbstentionRule().decide(between) == Verdict.answered
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__RELEVANCE__MODEL", "")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__ABSTENTION__NONE_DENSE", "0.55")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__ABSTENTION__NONE_SENTENCE", "0.51")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__ABSTENTION__COVERED", "0.9")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__LISTING__RELATIVE_BAR", "0.7")
    rules = Assistant(load_settings(), _NoIndex())
    assert type(rules.judge) is AbstentionRule and (rules.judge.none_dense, rules.judge.none_sentence) == (0.55, 0.51)
    assert rules.judge.decide(between) == Verdict.none
    assert rules.judge.decide(_evidence(0.50, 0.50, coverage=0.85)) == Verdict.none  # under the raised coverage guard
    assert rules.list_judge.decide(between) == Verdict.none and rules.topic_judge is rules.judge
    assert rules.list_bar.relative_bar == 0.7 and rules.generator.judge is rules.judge
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__ABSTENTION__WEAK_SUM", "1.05")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__ABSTENTION__NONE_DENSE", "0.3")
    assert Assistant(load_settings(), _NoIndex()).judge.decide(between) == Verdict.weak

    # The relevance model (the default): its file's cutoffs unless the settings give one, and the list members
    # are still judged by the rules with the settings' thresholds.
    monkeypatch.setattr(pipeline, "load_relevance", lambda version: _Relevance())
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__RELEVANCE__MODEL", "v2")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__RELEVANCE__ANSWERED", "0.8")
    model = Assistant(load_settings(), _NoIndex())
    assert type(model.judge) is CrossEncoderJudge
    assert (model.judge.answered, model.judge.weak, model.judge.veto) == (0.8, 0.2, 0.45)
    assert model.judge.decide(_evidence(0.1, 0.1, probability=0.6)) == Verdict.weak  # the file's 0.5 would answer
    assert (model.topic_judge.weak, model.topic_judge.veto) == (0.6, 0.0)  # the file's topic cutoff, no veto
    assert model.list_judge.none_dense == 0.3 and model.list_judge.weak_sum == 1.05
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__RELEVANCE__WEAK", "0.05")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__RELEVANCE__TOPIC", "0.3")
    model = Assistant(load_settings(), _NoIndex())
    assert model.judge.weak == 0.05 and model.topic_judge.weak == 0.3
    assert model.judge.decide(_evidence(0.1, 0.1, probability=0.1)) == Verdict.weak


def test_the_learned_models_are_named_by_version():
    # The learned judge is off by default (the relevance model judges); the learned evidence ranker is the only
    # sentence chooser, named by its version.
    cal = Calibration()
    assert cal.abstention.learned == "" and cal.sentences.learned == "v3" and cal.relevance.model == "v2"


def test_calibration_is_overridable_like_any_setting(monkeypatch):
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__LISTING__RELATIVE_BAR", "0.5")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__CHUNKING__OVERLAP_TOKENS", "16")
    s = load_settings()
    assert s.calibration.listing.relative_bar == 0.5 and s.calibration.chunking.overlap_tokens == 16
    assert s.calibration.chunking.hash_key() is not None and Calibration().chunking.hash_key() is None
