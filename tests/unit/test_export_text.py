"""BibTeX field values (no model): a lone dollar sign is text, not the start of math."""

from __future__ import annotations

from assistant.research.export import ExportItem, bib_value, read_bibtex, to_bibtex
from vectorstore.papers import Paper


def test_a_lone_dollar_in_a_title_is_escaped_and_math_is_kept():
    assert bib_value("Saving $5 on GPUs") == r"Saving \$5 on GPUs"
    assert bib_value("We cut cost by $5 per run with $x_i$ math.") == r"We cut cost by \$5 per run with $x_i$ math."
    assert bib_value("a $x$ and $O(n)$-time") == "a $x$ and $O(n)$-time"
    assert bib_value(r"already \$5") == r"already \$5"
    assert bib_value("display $$a_1 + b$$ math") == "display $$a_1 + b$$ math"


def test_a_bibtex_export_with_a_dollar_reads_back_as_written():
    paper = Paper(id="x#1", text="Costs $5 with $x_i$ terms.", title="Saving $5 on GPUs", venue="ICML", year=2026)
    text = to_bibtex([ExportItem(1, paper)])
    assert r"title = {Saving \$5 on GPUs}" in text and text.endswith("}\n")
    back = read_bibtex(text)[0]
    assert back["title"] == "Saving $5 on GPUs" and back["abstract"] == "Costs $5 with xᵢ terms."


def test_an_export_holds_no_control_sequences():
    """Second hostile round (#35, F19): an abstract, title or question holding terminal escapes (a screen clear,
    an OSC 52 clipboard write, a bare ESC) reached the Markdown and BibTeX files raw, and ran on `cat`."""
    from assistant.research.export import render

    paper = Paper(id="e#1", text="We clear\x1b[2J the screen\x1b]52;c;aGk=\x07 and ring\x07.", title="Esc\x1bape",
                  venue="ICML", year=2026)
    for fmt in ("markdown", "bibtex"):
        out = render([ExportItem(1, paper, "We clear\x1b[2J the screen.")], fmt, heading="Q\x1b[31m?")
        assert not any(c in out for c in "\x1b\x07\x9b\x9d"), (fmt, out)
        assert "We clear the screen" in out and ("Escape" in out or "Esc" in out)
    assert "# Q?" in render([ExportItem(1, paper)], "markdown", heading="Q\x1b[31m?")


def test_an_export_path_under_a_folder_this_user_may_not_enter_gets_its_own_remedy(tmp_path, monkeypatch):
    """A hostile round, run as another user: `--export /root/out.md` got the index's remedy ("`chmod -R u+rwX` on the
    index folder … or choose another --index"): the PermissionError of looking the path up escaped as it was."""
    import os

    from assistant.research.export import output_problem

    target = tmp_path / "private" / "out.md"
    real = os.lstat

    def lstat(path, *args, **kwargs):  # what the system answers a user without search permission on private/
        if str(path) == str(target):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    assert output_problem(target) == (f"{target}: cannot be reached (permission denied on a folder above it): choose a "
                                      "folder this user may write for --export")
