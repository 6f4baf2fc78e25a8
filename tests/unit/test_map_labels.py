"""The paper map's labels: what is drawn of a paper's name (assistant.paper_map)."""

from assistant.paper_map import shown_name, short_label
from vectorstore.papers import Paper

OSC52 = "\x1b]52;c;aGFja2Vk\x07"


def test_control_sequences_and_characters_are_not_drawn():
    paper = Paper(id="z", text="An abstract.", title="Zeta" + OSC52 + "Net\x1b[31m for\tgraphs\x00\x9b2J")
    assert shown_name(paper) == "ZetaNet for\tgraphs"
    assert short_label(paper, width=12) == "ZetaNet for…"


def test_a_label_is_plain_unicode_cut_to_its_width():
    paper = Paper(id="m", text="An abstract.", title=r"$\epsilon$-greedy search at 10$\times$ speed")
    assert short_label(paper, width=40) == "ϵ-greedy search at 10× speed"
    assert short_label(paper, width=10) == "ϵ-greedy…"  # a space before the cut is dropped
