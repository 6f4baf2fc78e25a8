"""Paper records and the files they come from: the :class:`Paper` record every loader makes (``records``),
which files a path names and each read by its format (``files``: ``.txt`` paper lists by ``format_txt``,
``.jsonl`` collections by ``format_jsonl``, BibTeX by ``format_bibtex``, CSV by ``format_csv``, arXiv snapshot
lines by ``format_arxiv``, streamed), the fields they share (``fields``), LaTeX as Unicode (``latex``), what a
reading keeps and passes over (``selection``), and what every loader checks of a file's text (``checks``).

Imports: :mod:`vectorstore.jsonl` only (and bibtexparser, pylatexenc)."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "records": ("CorpusError", "Paper", "code_links", "counted", "derive_label", "name_to_ask_by", "is_code_link"),
    "files": ("KINDS", "SUPPORTED_SUFFIXES", "file_format", "is_streamed", "iter_paper_files", "load_file",
              "load_papers", "missing_path", "read_file", "stream_file"),
    "format_jsonl": ("load_jsonl",),
    "format_txt": ("load_paper_list", "parse_heading"),
    "format_bibtex": ("load_bibtex",),
    "format_csv": ("load_csv",),
    "format_arxiv": ("ARXIV_FIELDS", "iter_arxiv"),
    "selection": ("Selection", "Tally", "entries"),
    "checks": ("MAX_ABSTRACT_CHARS", "MAX_FILE_BYTES", "open_regular", "visible"),
})
