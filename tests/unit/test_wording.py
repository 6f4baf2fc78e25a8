"""Counts read as English: "1 paper in 1 chunk", "3 papers in 5 chunks" (no model)."""

from __future__ import annotations

from vectorstore.ingest import IngestReport
from vectorstore.papers import counted


def test_counts_take_the_singular_for_one():
    assert [counted(n, "paper") for n in (0, 1, 2)] == ["0 papers", "1 paper", "2 papers"]
    one = IngestReport(added=1, papers_total=1, chunks_total=1).summary()
    assert one == "1 added, 0 updated, 0 unchanged, 0 removed, 0 skipped; index holds 1 paper in 1 chunk"
    assert IngestReport(papers_total=3, chunks_total=5).summary().endswith("index holds 3 papers in 5 chunks")
