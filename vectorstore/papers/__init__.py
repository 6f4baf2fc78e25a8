"""Paper records and the files they come from: the :class:`Paper` record every loader makes (``records``),
which files a path names and each loaded by its format (``files``: ``.txt`` paper lists by ``format_txt``,
``.jsonl`` collections by ``format_jsonl``), and what every loader checks of a file's text (``checks``).

Imports: :mod:`vectorstore.jsonl` only."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "records": ("CorpusError", "Paper", "code_links", "counted", "derive_label", "is_code_link"),
    "files": ("SUPPORTED_SUFFIXES", "iter_paper_files", "load_file", "load_papers"),
    "format_jsonl": ("load_jsonl",),
    "format_txt": ("load_paper_list", "parse_heading"),
    "checks": ("MAX_ABSTRACT_CHARS", "visible"),
})
