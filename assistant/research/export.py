"""Export the cited papers of an answer or a list result as Markdown or BibTeX.

BibTeX is written and read with bibtexparser (v2 API: ``Library``, ``model.Entry``, ``write_string``,
``parse_string``). Each entry carries the paper's index id in a ``paperid`` field, so an export can be
matched back to the index. ``&``, ``%`` and ``#`` are escaped in text fields, ``_`` and a ``$`` that opens no math outside inline
math (abstracts carry math such as ``$x_i$``; a title may say "$5"), and unbalanced braces dropped, so the file
is valid BibTeX and typesets; :func:`read_bibtex` undoes the escaping. Markdown escapes the characters
that would make links, emphasis or HTML of a title or quote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import bibtexparser
from bibtexparser import model

from assistant.text import plain, strip_controls, valid_text
from vectorstore.papers import Paper, counted

FORMATS = {".bib": "bibtex", ".bibtex": "bibtex", ".md": "markdown", ".markdown": "markdown"}
_SPECIAL = re.compile(r"(?<!\\)([&%_#$])")
_IN_MATH = re.compile(r"(?<!\\)([&%#])")
_UNESCAPE = re.compile(r"\\([&%_#$])")
# Inline math by pandoc's rule: the opening $ has a non-space on its right, the closing $ one on its left
# and no digit after it, so "costs $5 per run and $3" is two dollar signs, not math.
_MATH = re.compile(r"(?<!\\)(\$\$[^$]+\$\$|\$(?=[^\s$])[^$]*?(?<=[^\s\\])\$(?!\d))")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")
_VERBATIM = {"paperid", "url", "doi", "eprint"}


@dataclass
class ExportItem:
    """One exported paper: its number in the answer or list, the paper, and the sentence that supports it."""

    n: int
    paper: Paper
    sentence: str = ""


def items_from_answer(ans, store) -> list[ExportItem]:
    """The cited sources of a :class:`assistant.types.CitedAnswer`, in citation order (papers read from ``store``)."""
    papers = store.get_papers([s.paper_id for s in ans.sources])
    return [ExportItem(s.n, papers[s.paper_id], s.sentence) for s in ans.sources if s.paper_id in papers]


def items_from_list(result) -> list[ExportItem]:
    """The listed papers of a :class:`assistant.relevance.listing.ListResult`, best first."""
    return [ExportItem(p.rank, p.paper, p.sentence.text if p.sentence else "") for p in result.papers]


# --- BibTeX ---------------------------------------------------------------------------------------
def _balanced(text: str) -> str:
    """``text`` with braces that do not pair up removed (BibTeX values must be brace-balanced)."""
    out, depth, stack = [], 0, []
    for ch in text:
        if ch == "{":
            stack.append(len(out))
            out.append(ch)
            depth += 1
        elif ch == "}":
            if depth:
                depth -= 1
                stack.pop()
                out.append(ch)
        else:
            out.append(ch)
    for i in reversed(stack):  # unclosed "{"
        del out[i]
    return "".join(out)


def bib_value(text: str, verbatim: bool = False) -> str:
    """A field value safe for BibTeX and LaTeX: one line, balanced braces, ``& % #`` escaped and ``_``
    and a lone ``$`` too outside ``$…$`` (not for ``verbatim`` fields such as ids and URLs); no control
    sequence (:func:`assistant.text.strip_controls`)."""
    value = " ".join(_balanced(strip_controls(str(text))).split())
    if verbatim:
        return value
    # & % # are errors (or a comment) even in math; _ is a subscript there, so inline math keeps it.
    parts = _MATH.split(value)
    return "".join(_IN_MATH.sub(r"\\\1", part) if i % 2 else _SPECIAL.sub(r"\\\1", part)
                   for i, part in enumerate(parts))


def unescape(value: str) -> str:
    return _UNESCAPE.sub(r"\1", value)


def cite_key(paper: Paper, taken: set[str]) -> str:
    """A BibTeX key from the paper's label and year, e.g. ``omnimoe2026``; unique within ``taken``."""
    words = re.findall(r"[A-Za-z0-9]+", paper.label or paper.title or paper.id)
    # A label derived from the contribution ("a unified framework for …") keys by its words, not its article.
    words = [w for w in words if w.lower() not in ("a", "an", "the")] or words
    base = "".join(words[:3]).lower()[:30] or "paper"
    base += str(paper.year or "")
    return _unique(base, taken)


def _unique(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with a letter (then a number) that no key in ``taken`` has; added to ``taken``."""
    key, i = base, 0
    while key in taken:
        i += 1
        key = f"{base}{chr(ord('a') + i - 1) if i <= 26 else i}"
    taken.add(key)
    return key


VENUE_NAMES = {
    "icml": "International Conference on Machine Learning",
    "neurips": "Advances in Neural Information Processing Systems",
    "nips": "Advances in Neural Information Processing Systems",
    "iclr": "International Conference on Learning Representations",
    "cvpr": "IEEE/CVF Conference on Computer Vision and Pattern Recognition",
    "iccv": "IEEE/CVF International Conference on Computer Vision",
    "eccv": "European Conference on Computer Vision",
    "acl": "Annual Meeting of the Association for Computational Linguistics",
    "emnlp": "Conference on Empirical Methods in Natural Language Processing",
    "naacl": "Conference of the North American Chapter of the Association for Computational Linguistics",
    "aaai": "AAAI Conference on Artificial Intelligence",
    "ijcai": "International Joint Conference on Artificial Intelligence",
    "aistats": "International Conference on Artificial Intelligence and Statistics",
    "uai": "Conference on Uncertainty in Artificial Intelligence",
    "colt": "Conference on Learning Theory",
    "corl": "Conference on Robot Learning",
    "kdd": "ACM SIGKDD Conference on Knowledge Discovery and Data Mining",
    "sigir": "International ACM SIGIR Conference on Research and Development in Information Retrieval",
}
"""Full names of the venues a paper list's heading abbreviates ("ICML 2026"), for ``booktitle``."""


def venue_name(venue: str) -> str:
    """``"ICML"`` → ``"International Conference on Machine Learning (ICML)"``; a venue not in
    :data:`VENUE_NAMES` (or already spelled out) as it is."""
    full = VENUE_NAMES.get(venue.strip().lower())
    return f"{full} ({venue.strip()})" if full else venue


def _own_entry(p: Paper, taken: set[str]) -> model.Entry:
    """The BibTeX entry a paper was read from (``Paper.bibtex``), written back: its type, its citation key (a
    letter added if another exported entry has it), its fields in their order, its abstract as stored (its math
    too: it came from a .bib), and ``paperid``."""
    fields = [(k, v) for k, v in p.bibtex.items() if k not in ("ENTRYTYPE", "ID")]
    fields += [("abstract", p.text), ("paperid", p.id)]
    return model.Entry(p.bibtex.get("ENTRYTYPE", "misc"), _unique(p.bibtex.get("ID") or cite_key(p, set()), taken),
                       [model.Field(k, bib_value(v, k in _VERBATIM)) for k, v in fields])


def to_bibtex(items: list[ExportItem]) -> str:
    """BibTeX entries for ``items``: a paper read from a .bib file as its own entry (type, key and fields as read);
    any other as ``@inproceedings`` when the venue is known, else ``@misc``, with the paper's full title and
    authors when its record has them, an untitled paper's short label as title, with a ``note`` saying it is a
    derived label, and an arXiv paper's ``eprint``, ``archiveprefix`` and ``primaryclass``."""
    lib = bibtexparser.Library()
    taken: set[str] = set()
    for it in items:
        p = it.paper
        if p.bibtex:
            lib.add(_own_entry(p, taken))
            continue
        # The full title when the record has one (JSONL corpora); a bundled .txt paper list gives none,
        # so its short label stands in and a note says so rather than passing it off as the title.
        fields = [("title", p.display())]
        if p.authors:
            fields.append(("author", " and ".join(p.authors)))
        if not p.title:
            fields.append(("note", f"Title and authors not in the paper list; “{p.display()}” is a short label "
                                   "derived from the abstract"))
        if p.venue:
            fields.append(("booktitle", venue_name(p.venue)))
        if p.year:
            fields.append(("year", str(p.year)))
        if p.url or p.links:  # the record's own URL, else the code or project link the abstract gives
            fields.append(("url", p.url or p.links[0]))
        if p.id.startswith("arxiv:"):  # an arXiv snapshot's paper: how BibTeX styles cite a preprint
            fields += [("eprint", p.id.removeprefix("arxiv:")), ("archiveprefix", "arXiv")] + \
                [("primaryclass", p.categories[0])] * bool(p.categories)
        # Plain text: a reference manager shows the abstract as it is, so no Markdown or LaTeX marks.
        fields += [("abstract", plain(p.text)), ("paperid", p.id)]
        lib.add(model.Entry("inproceedings" if p.venue else "misc", cite_key(p, taken),
                            [model.Field(k, bib_value(v, k in _VERBATIM)) for k, v in fields]))
    return bibtexparser.write_string(lib)


def read_bibtex(text: str) -> list[dict]:
    """Parse BibTeX with bibtexparser: ``[{"key", "type", "paperid", "title", "year", ...}]`` (unescaped).

    Raises ValueError when some block does not parse.
    """
    lib = bibtexparser.parse_string(text)
    if lib.failed_blocks:
        raise ValueError(f"{len(lib.failed_blocks)} BibTeX block(s) did not parse")
    out = []
    for e in lib.entries:
        rec = {"key": e.key, "type": e.entry_type}
        rec.update({f.key: str(f.value) if f.key in _VERBATIM else unescape(str(f.value)) for f in e.fields})
        out.append(rec)
    return out


# --- Markdown -------------------------------------------------------------------------------------
def to_markdown(items: list[ExportItem], heading: str = "Papers") -> str:
    """A Markdown list: number, title, id, venue/year, link, the supporting sentence as a quote."""
    lines = [f"# {md_text(heading)}", "", f"{counted(len(items), 'paper')}.", ""]
    for it in items:
        p = it.paper
        # "Last, First" names are kept apart with semicolons.
        authors = ("; " if any("," in a for a in p.authors) else ", ").join(p.authors)
        meta = md_text(", ".join(x for x in (authors, p.venue, str(p.year or "")) if x))
        url = _md_url(p.url)
        title = f"[{md_text(p.display())}](<{url}>)" if url else md_text(p.display())
        lines.append(f"{it.n}. **{title}** — `{p.id.replace('`', '')}`" + (f" ({meta})" if meta else ""))
        if it.sentence:
            lines.append(f"   > {md_text(it.sentence)}")
        links = [u for u in map(_md_url, p.links) if u]
        if links:
            lines.append("   Code / project: " + ", ".join(f"<{u}>" for u in links))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _md_url(url: str) -> str:
    """``url`` safe inside ``<…>`` in Markdown: http(s) only (no javascript:, file: or data:), no
    angle brackets, spaces as %20; "" otherwise."""
    url = re.sub(r"[<>\s]", lambda m: "%20" if m.group(0).isspace() else "", url)
    return url if re.match(r"https?://", url, re.I) else ""


def md_text(text: str) -> str:
    """``text`` shown literally in Markdown: link brackets, emphasis, code, table bars and HTML escaped;
    LaTeX math as Unicode first (``10.9$\\times$`` → ``10.9×``: a Markdown viewer renders no math); control
    sequences dropped whole (``ESC [ 2 J``, not just its ESC)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(plain(strip_controls(str(text))).split()))


def export_format(path: str | Path) -> str:
    """'bibtex' or 'markdown' from a file name; ValueError for another suffix."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"cannot export to {Path(path).name!r}: use a .bib or .md file name")
    return fmt


def render(items: list[ExportItem], fmt: str, heading: str = "Papers") -> str:
    """``items`` as BibTeX or Markdown (``fmt``: :func:`export_format`), without control sequences: an abstract or
    a question holding ``ESC [ 2 J`` or an OSC 52 string reached the file raw, and ran when it was printed with
    ``cat`` (a hostile round, #35 F19)."""
    text = to_bibtex(items) if fmt == "bibtex" else to_markdown(items, heading)
    return strip_controls(valid_text(text))  # and what other fields (ids, authors, a .bib's own entry) carry


def output_problem(path: Path, force: bool = False, flag: str = "--export") -> str:
    """Why an output file (``--export``, ``map --out``) may not be written, in one line, or "": a path that cannot
    be created (:func:`vectorstore.paths.creation_problem`: under a file, a name too long), a symbolic link
    (dangling or not: writing through it would create or change a file elsewhere), a folder, a FIFO, socket or
    device (even with ``force``: opening a FIFO waits for a reader, forever), or an existing file without
    ``force`` (hostile round #35: both followed a dangling link; a folder was "unexpected IsADirectoryError";
    a FIFO hung the command)."""
    from vectorstore.paths import creation_problem

    path = Path(path)
    if problem := creation_problem(path, flag):
        return problem
    try:
        os.lstat(path)
    except PermissionError:  # a folder above it this user may not enter: it got the index's remedy (a hostile round)
        return (f"{path}: cannot be reached (permission denied on a folder above it): choose a folder this user may "
                f"write for {flag}")
    except OSError:
        pass
    if path.is_symlink():
        return f"{path} is a symbolic link: {flag} writes only a plain file, never through a link; name another file"
    if path.is_dir():
        return f"{path} is a folder: name a file for {flag}, e.g. {path / ('map.png' if flag == '--out' else 'papers.md')}"
    if path.exists() and not path.is_file():
        return f"{path} is not a plain file (a FIFO, socket or device): {flag} writes only a plain file; name another file"
    if path.exists() and not force:
        return f"{path} already exists: pass --force to overwrite it, or choose another file name"
    return ""


def write_export(path: str | Path, items: list[ExportItem], heading: str = "Papers") -> Path:
    """Write ``items`` to ``path`` as BibTeX (.bib) or Markdown (.md); returns the path. Raises ValueError for a
    path :func:`output_problem` refuses (looked at again: the command's own work came between), and for one that
    turned into no plain file meanwhile, or cannot be written whole (:func:`vectorstore.paths.write_output`: all or
    nothing, never through a link or into a FIFO)."""
    from vectorstore.paths import write_output

    path = Path(path)
    problem = output_problem(path, force=True)
    if problem:
        raise ValueError(problem)
    text = render(items, export_format(path), heading)
    write_output(path, lambda f: f.write(text.encode("utf-8")), "--export")
    return path
