"""The paper map's labels: what is drawn of a paper's name (assistant.research.paper_map)."""

from assistant.research.map_labels import shown_name, short_label
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


def test_math_letters_are_drawn_as_plain_letters():
    """A label from a contribution sentence, "an $\\mathfrak{so}(n)$-valued 1-form", drew two missing glyphs."""
    paper = Paper(id="m", text="An abstract.", label=r"an $\mathfrak{so}(n)$-valued 1-form")
    assert short_label(paper, width=40) == "an so(n)-valued 1-form"
    assert short_label(Paper(id="o", text="x", title=r"$\mathcal{O}(\sqrt{T})$ regret"), width=40) == "O(√T) regret"


def _synthetic_map(n: int, k: int = 8):
    import numpy as np

    from assistant.research.map_types import Cluster, MapPoint, PaperMap

    rng = np.random.default_rng(0)
    xy = rng.normal(size=(n, 2))
    points = [MapPoint(Paper(id=f"p{i}", text="An abstract.", title=f"Paper number {i}"), float(x), float(y), i % k)
              for i, (x, y) in enumerate(xy)]
    return PaperMap(points, [Cluster(c, ["word"], n // k) for c in range(k)], (0.5, 0.2), None)


def test_a_big_map_labels_a_bounded_number_of_points_hits_first_and_spread_over_clusters():
    """Every one of 2,000 labels was checked against every box: `map` took minutes and pinned a core."""
    from assistant.research.map_labels import MAX_LABELS, place_labels

    pmap = _synthetic_map(3000)
    labels = place_labels(pmap, char_w=0.0062, line_h=0.028, first=["p2999", "p5", "nope"])
    ids = [p.paper.id for *_, p in labels]
    assert len(ids) == MAX_LABELS == len(set(ids)) and {"p2999", "p5"} <= set(ids)
    assert {p.cluster for *_, p in labels} == set(range(8))
    small = _synthetic_map(30)
    assert len(place_labels(small, char_w=0.0062, line_h=0.028)) == 30  # a small map labels every point


def test_labels_placed_on_a_grid_overlap_no_other_label_where_there_is_room():
    from assistant.research.map_labels import place_labels

    pmap = _synthetic_map(40)
    placed = place_labels(pmap, char_w=0.004, line_h=0.02, width=12)
    xr = max(p.x for p in pmap.points) - min(p.x for p in pmap.points)
    yr = max(p.y for p in pmap.points) - min(p.y for p in pmap.points)
    boxes = []
    for text, x, y, ha, _, _ in placed:
        w = 0.004 * xr * len(text)
        x0 = x - (w / 2 if ha == "center" else w if ha == "right" else 0)
        boxes.append((x0, y, x0 + w, y + 0.02 * yr))
    clashes = sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1:]
                  if min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1]))
    assert clashes <= 2


def test_the_cluster_list_beside_the_map_is_one_flat_numbered_list():
    """Issue 33 (6): the page showed the first cluster as a numbered paragraph and the rest as bullets each
    holding a number ("- 2. …"), Markdown's nested list."""
    from assistant.page.paper_map import map_info
    from assistant.research.map_types import Cluster

    pmap = _synthetic_map(16, k=3)
    pmap.clusters = [Cluster(0, ["video", "text"], 10), Cluster(1, ["diffusion", "unlearning"], 5), Cluster(2, ["bandits"], 1)]
    lines = map_info(pmap, [], "").split("\n")
    assert lines[-4:] == ["", "1. video, text (10 papers)", "2. diffusion, unlearning (5 papers)", "3. bandits (1 paper)"]
    assert not any(line.lstrip().startswith(("- ", "* ")) for line in lines)
    with_hits = map_info(pmap, ["p1"], "Which papers use video?").split("\n")
    assert with_hits[-4:] == lines[-4:] and "Highlighted (★): 1 paper" in with_hits[2]
