"""The .txt paper list's blank lines (vectorstore.papers.format_txt.load_paper_list): a line that shows nothing is blank."""

import pytest

from vectorstore.papers import load_paper_list, visible

INVISIBLE = {"zero-width space": "\u200b", "zero-width non-joiner": "\u200c", "zero-width joiner": "\u200d",
             "BOM": "\ufeff", "word joiner": "\u2060", "soft hyphen": "\u00ad", "left-to-right mark": "\u200e",
             "right-to-left mark": "\u200f", "right-to-left embedding": "\u202b", "pop directional": "\u202c",
             "first strong isolate": "\u2068", "no-break space": "\u00a0", "ideographic space": "\u3000",
             "spaces and a zero-width space": " \u200b\t"}


@pytest.mark.parametrize("line", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_an_invisible_only_line_is_a_blank_line_under_the_heading_between_and_after_abstracts(tmp_path, line):
    """Seventh break-it run (#50): a zero-width space alone on the line under the heading was read as the first
    abstract's first line, so the paper's stored text began with "\\u200b\\n"."""
    f = tmp_path / "web.txt"
    f.write_text(f"ICML 2026\n{line}\nFirst abstract.\n{line}\nSecond abstract.\n{line}\n", encoding="utf-8")
    papers = load_paper_list(f)
    assert [p.text for p in papers] == ["First abstract.", "Second abstract."]
    assert [p.id for p in papers] == ["web#1", "web#2"] and {(p.venue, p.year) for p in papers} == {("ICML", 2026)}
    assert not visible(line)
