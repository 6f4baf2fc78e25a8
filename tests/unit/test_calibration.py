"""Every tuned number sits in Settings.calibration with a description and a source."""

from assistant.settings import Calibration, calibration_table, load_settings


def test_every_calibrated_number_has_a_description_and_a_source():
    rows = calibration_table()
    assert len(rows) >= 35
    for name, _value, description, source in rows:
        assert description.strip(), name
        assert source.strip(), name


def test_the_answer_path_reads_its_numbers_from_the_calibration():
    from assistant.relevance.listing import ListBar
    from assistant.relevance.judge import AbstentionRule

    cal = Calibration()
    assert AbstentionRule().none_dense == cal.abstention.none_dense
    assert ListBar().relative_bar == cal.listing.relative_bar
    # The learned judge is named here and off by default (the rules still do better on dev); the learned
    # evidence ranker is the only sentence chooser, named by its version.
    assert cal.abstention.learned == "" and cal.sentences.learned == "v3"


def test_calibration_is_overridable_like_any_setting(monkeypatch):
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__LISTING__RELATIVE_BAR", "0.5")
    monkeypatch.setenv("PAPER_ASSISTANT_CALIBRATION__CHUNKING__OVERLAP_TOKENS", "16")
    s = load_settings()
    assert s.calibration.listing.relative_bar == 0.5 and s.calibration.chunking.overlap_tokens == 16
    assert s.calibration.chunking.hash_key() is not None and Calibration().chunking.hash_key() is None
