"""Small "bring your own library" files the tests write themselves: a Zotero-style BibTeX export, a Zotero-style CSV
and arXiv metadata snapshot lines, each with the entries every reader must cope with (string macros, LaTeX accents,
a missing abstract, a duplicated key, a malformed entry). Shared by tests/unit/test_library_loaders.py (no model)
and tests/test_library.py (ingested with the real model)."""

from __future__ import annotations

import json
from pathlib import Path

BIB = r"""% Exported by Zotero
@string{jmlr = "Journal of Machine Learning Research"}
@string{neurips = {Advances in Neural Information Processing Systems}}

@article{mueller2023quokka,
  title = {{QuokkaFormer}: Sparse Attention for M{\"u}nchen Street Scenes},
  author = {M{\"u}ller, J{\"o}rg and Garc{\'\i}a, Ana},
  journal = jmlr,
  year = {2023},
  doi = {10.5555/quokka.2023},
  abstract = {We introduce QuokkaFormer, a sparse attention transformer for street scene parsing.
    QuokkaFormer attends to 12\% of the tokens and keeps its accuracy on the M{\"u}nchen benchmark.},
}

@inproceedings{chen2024marmot,
  title = {MarmotNet: Burrowing Through Long Contexts},
  author = {Chen, Li and Dubois, Fran{\c{c}}ois},
  booktitle = neurips # " 37",
  year = 2024,
  abstract = {We propose MarmotNet, a recurrent memory that burrows through long contexts of a million tokens. MarmotNet compresses each segment into a learned summary of $O(\log n)$ size.},
}

@misc{okafor2024otter,
  title = {Otter Gradients: Variance Reduction for Reinforcement Learning},
  author = {Okafor, Chidi},
  year = {2024},
  eprint = {2405.01234},
  archivePrefix = {arXiv},
  primaryClass = {cs.LG},
  abstract = {We present OtterGrad, a variance reduction method for policy gradients that reuses past trajectories. OtterGrad halves the samples needed on continuous control benchmarks.},
}

@article{nobody2022,
  title = {A Paper Without an Abstract},
  author = {Nobody, N.},
  journal = jmlr,
  year = {2022},
}

@article{mueller2023quokka,
  title = {Duplicate Key},
  abstract = {This entry reuses the key of the first one.},
  year = {2023},
}

@article{badyear,
  title = {A Bad Year},
  abstract = {An entry whose year is no year.},
  year = {30000},
}
"""

CSV_ROWS = [
    ["Key", "Item Type", "Publication Year", "Author", "Title", "Publication Title", "DOI", "Url", "Abstract Note",
     "Date", "Manual Tags"],
    ["ABCD2345", "journalArticle", "2022", "Ivanova, Mila; Tanaka, Kenji", "HeronNet for Wetland Mapping",
     "Remote Sensing Letters", "10.1000/heron", "",
     "We present HeronNet, a segmentation network for wetland mapping from satellite images.\n"
     "HeronNet labels reeds, open water and mud at ten metre resolution.", "2022-06-01", ""],
    ["EFGH6789", "conferencePaper", "2021", "Smith, A.", "No Abstract Here", "CVPR", "", "", "", "", ""],
    ["IJKL0123", "preprint", "2023", "Lee, B.", "A Broken Row"],
    ["MNOP4567", "conferencePaper", "2023", "Rossi, Paolo", "BadgerDB: Learned Indexes", "VLDB", "",
     "https://example.org/badger",
     "We introduce BadgerDB, a learned index that digs through sorted keys with piecewise linear models.", "", ""],
]


def csv_text(rows: list[list[str]]) -> str:
    """Zotero's CSV: every cell quoted, CRLF line ends (inside cells too)."""
    def cell(c: str) -> str:
        return '"' + c.replace('"', '""').replace("\n", "\r\n") + '"'
    return "".join(",".join(cell(c) for c in row) + "\r\n" for row in rows)


def arxiv_record(aid: str, title: str, abstract: str, categories: str, updated: str, created: str,
                 authors: list[list[str]]) -> dict:
    """One record as Kaggle's arXiv metadata snapshot has it."""
    return {"id": aid, "submitter": authors[0][1] + " " + authors[0][0],
            "authors": ", ".join(f"{a[1]} {a[0]}" for a in authors), "title": title, "comments": "8 pages",
            "journal-ref": None, "doi": None, "report-no": None, "categories": categories,
            "license": "http://arxiv.org/licenses/nonexclusive-distrib/1.0/", "abstract": abstract,
            "versions": [{"version": "v1", "created": created}], "update_date": updated, "authors_parsed": authors}


ARXIV = [
    arxiv_record("2401.00001", "PelicanRL: Diving for\n  Sparse Rewards",
                 "  We propose PelicanRL, an exploration bonus that dives for sparse rewards in Atari games.\n"
                 "PelicanRL doubles the score on Montezuma's Revenge.\n", "cs.LG stat.ML", "2024-01-05",
                 "Tue, 2 Jan 2024 10:00:00 GMT", [["Bal\\'azs", "A.", ""], ["Nowak", "B.", ""]]),
    arxiv_record("2312.09999", "FlamingoSeg: Pink Pixel Segmentation",
                 "We introduce FlamingoSeg, which segments pink objects in aerial photographs of lagoons.",
                 "cs.CV", "2023-12-20", "Wed, 20 Dec 2023 09:00:00 GMT", [["Silva", "C.", ""]]),
    arxiv_record("2402.00002", "An Empty Abstract", "", "cs.LG", "2024-02-01", "Thu, 1 Feb 2024 09:00:00 GMT",
                 [["Park", "D.", ""]]),
    arxiv_record("2403.00004", "WombatLM: Retrieval Burrows",
                 "We present WombatLM, a language model that digs burrows of retrieval memory for question answering.",
                 "cs.CL cs.LG", "2024-03-01", "Fri, 1 Mar 2024 09:00:00 GMT", [["Brown", "E.", ""]]),
]


def arxiv_text(records: list[dict], broken_line: int | None = 3) -> str:
    """The records one a line; before record ``broken_line`` (1-based) a line cut short (not JSON)."""
    lines = [json.dumps(r) for r in records]
    if broken_line is not None:
        lines.insert(broken_line - 1, '{"id": "2402.00003", "title": "cut sho')
    return "\n".join(lines) + "\n"


def line_of(text: str, marker: str, nth: int = 1) -> int:
    """The 1-based line on which ``marker`` occurs the ``nth`` time in ``text``."""
    pos = -1
    for _ in range(nth):
        pos = text.index(marker, pos + 1)
    return text[:pos].count("\n") + 1


def write_library(folder: Path) -> dict[str, Path]:
    """The three files in ``folder``: ``{"bib": zotero.bib, "csv": library.csv (a BOM), "arxiv": arxiv.json}``."""
    folder.mkdir(parents=True, exist_ok=True)
    bib, csv, arxiv = folder / "zotero.bib", folder / "library.csv", folder / "arxiv.json"
    bib.write_text(BIB, encoding="utf-8")
    csv.write_bytes(b"\xef\xbb\xbf" + csv_text(CSV_ROWS).encode("utf-8"))
    arxiv.write_text(arxiv_text(ARXIV), encoding="utf-8")
    return {"bib": bib, "csv": csv, "arxiv": arxiv}
