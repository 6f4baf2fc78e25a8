"""Paper map: PCA layout, KMeans clusters with c-TF-IDF keywords, plotly figure, PNG via the CLI."""

import json
import shutil
import struct

import numpy as np
import pytest

from assistant.research.paper_map import build_map, cluster_keywords, index_map, map_figure
from tests.conftest import ARTIFACTS
from vectorstore.papers import Paper

HITS = ["000_12a0d7b1c5c902c5#14", "000_12a0d7b1c5c902c5#10"]


@pytest.fixture(scope="module")
def pmap(index):
    return index_map(index.store)


def test_map_of_the_bundled_corpus(pmap):
    assert len(pmap.points) == 38 and len({p.paper.id for p in pmap.points}) == 38
    assert 2 <= len(pmap.clusters) <= 12 and sum(c.size for c in pmap.clusters) == 38
    assert all(len(c.keywords) >= 3 for c in pmap.clusters)
    assert all(np.isfinite([p.x, p.y]).all() for p in pmap.points)
    # The two personality papers share a cluster, and its keywords say so.
    by_id = {p.paper.id: p for p in pmap.points}
    c = by_id[HITS[0]].cluster
    assert by_id[HITS[1]].cluster == c and "personality" in pmap.clusters[c].keywords


def test_plotly_figure_highlights_hits(pmap):
    fig = map_figure(pmap, HITS + ["nope#1"])
    cluster_traces = [t for t in fig.data if t.name and not t.name.startswith("hits")]
    assert sum(len(t.x) for t in cluster_traces) == 38
    hits = [t for t in fig.data if t.name and t.name.startswith("hits")]
    assert len(hits) == 1 and len(hits[0].x) == 2
    assert json.loads(fig.to_json())["data"]


def test_keywords_and_tiny_maps():
    texts = ["graph neural networks for molecules graph", "graph coloring graph networks",
             "speech recognition audio speech", "audio speech synthesis"]
    words = cluster_keywords(texts, np.array([0, 0, 1, 1]), n_words=2)
    assert "graph" in words[0] and "speech" in words[1]
    one = build_map([Paper(id="a", text="only paper", label="A")], np.ones((1, 4), np.float32))
    assert len(one.points) == 1 and one.clusters[0].size == 1
    with pytest.raises(ValueError, match="no papers"):
        build_map([], np.zeros((0, 4), np.float32))


def test_cli_map_writes_a_png(assistant, index_dir, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from assistant import cli
    from assistant.answer import service

    monkeypatch.setattr(service, "get_assistant", lambda settings: assistant)
    out_png = tmp_path / "map.png"
    res = CliRunner().invoke(cli.app, ["map", "--out", str(out_png), "--index", str(index_dir),
                                       "--question", "Which papers study personality in large language models?"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"wrote {out_png}: 38 papers in ") and "2 highlighted" in res.output
    head = out_png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width >= 1600 and height >= 1200
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(out_png, ARTIFACTS / "map.png")
    bad = CliRunner().invoke(cli.app, ["map", "--out", str(tmp_path / "map.svg"), "--index", str(index_dir)])
    assert bad.exit_code == 2


def test_map_json_writes_no_png_unless_asked(index_dir, tmp_path, monkeypatch):
    """`map --json` quietly wrote map.png into the current folder, and the next run failed on it."""
    import json as _json

    from typer.testing import CliRunner

    from assistant import cli

    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli.app, ["map", "--json", "--index", str(index_dir)])
    assert res.exit_code == 0, res.output
    assert _json.loads(res.stdout)["out"] is None and list(tmp_path.iterdir()) == []
