"""LaTeX in the fields of BibTeX entries and arXiv records, as the loaders store it: accents and special letters as
Unicode (``{\\"o}`` → ö, ``\\'\\i`` → í, ``\\ss`` → ß), braces gone; math (``$O(n^2)$``) kept, for
:mod:`assistant.text.markup` renders it where it is shown, as for every other abstract.

Through pylatexenc (bibtexparser's own LaTeX decoder): :class:`LatexToUnicode` decodes every field of a BibTeX
entry (bibtexparser's ``LatexDecodingMiddleware`` with a bare ``%``, ``&`` or ``#`` taken literally: LaTeX would
read a comment or a table cell, and drop the rest of the value); :func:`accents` decodes only the accents of an arXiv
record, whose ``\\emph``, ``\\%`` and math the markup renders (decoding a whole abstract costs about 5 ms, as much
as embedding it)."""

from __future__ import annotations

import re
from functools import lru_cache

from bibtexparser.middlewares import LatexDecodingMiddleware
from pylatexenc import latexwalker, macrospec
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

_BARE = re.compile(r"(?<!\\)([%&#])")
"""A ``%``, ``&`` or ``#`` without its backslash: in a BibTeX value the character itself."""
_ACCENT = re.compile(r"\{?\\(?:['\"`^~=.]|[uvHtcdbkr](?![A-Za-z]))\s*(?:\{\\?[A-Za-z]\}|\\?[A-Za-z])\}?"
                     r"|\{?\\(?:ss|ae|AE|oe|OE|aa|AA|o|O|l|L|i|j)(?![A-Za-z])\}?")
"""An accent command and its letter (``\\'e``, ``{\\"o}``, ``\\H{o}``, ``\\c{c}``, ``\\'\\i``) or a special letter
(``\\ss``, ``{\\o}``); ``\\cite``, ``\\beta`` and other commands are not accents (a letter follows theirs)."""


@lru_cache(maxsize=1)
def _parsing() -> macrospec.LatexContextDb:
    """pylatexenc's parsing context, knowing that ``\\href`` takes two arguments (without it, its text conversion
    fails with IndexError on ``\\href{url}{text}``, a common way to link code in an abstract)."""
    context = latexwalker.get_default_latex_context_db()
    context.add_context_category("paper-assistant", prepend=True, macros=[macrospec.std_macro("href", False, 2)])
    return context


@lru_cache(maxsize=1)
def decoder() -> LatexNodes2Text:
    """pylatexenc's LaTeX-to-text converter as bibtexparser configures it: math kept verbatim, braces dropped,
    ``\\url{x}`` as ``x``; the font commands pylatexenc parses but has no text for (``\\texttt{x}``, which links
    code in many abstracts, ``\\textsf``, ``\\textmd``, ``\\textup``, ``\\mbox``) as their text, not as nothing."""
    context = get_default_latex_context_db()
    context.add_context_category("paper-assistant", prepend=True, macros=[
        MacroTextSpec(name, simplify_repl="%s") for name in ("url", "texttt", "textsf", "textmd", "textup", "mbox")])
    return LatexNodes2Text(latex_context=context, keep_braced_groups=False, math_mode="verbatim")


def to_unicode(value: str) -> str:
    """A BibTeX value's LaTeX as text: accents as Unicode, ``\\%`` as ``%``, ``\\emph{x}`` as ``x``, braces dropped,
    math kept. A value without a backslash, brace, tie or TeX quote is returned as it is (most are). LaTeX that
    pylatexenc cannot read keeps its commands, with its accents decoded and its braces dropped: a decoder's
    failure must not cost the paper."""
    if not re.search(r"[\\{}~]|``|''|--", value):
        return value
    escaped = _BARE.sub(r"\\\1", value)
    try:
        nodes = latexwalker.LatexWalker(escaped, latex_context=_parsing(), tolerant_parsing=True).get_latex_nodes()[0]
        return decoder().nodelist_to_text(nodes)
    except Exception:  # noqa: BLE001 - pylatexenc's own errors (an IndexError in a macro's text, say)
        return re.sub(r"(?<!\\)[{}]", "", accents(value))


def accents(text: str) -> str:
    """``text`` with its LaTeX accents and special letters as Unicode (``Bal\\'azs`` → Balázs); nothing else changed."""
    if "\\" not in text:
        return text
    return _ACCENT.sub(lambda m: decoder().latex_to_text(m.group(0)), text)


class LatexToUnicode(LatexDecodingMiddleware):
    """bibtexparser's LaTeX decoding of every field (:func:`to_unicode`), in a parse stack after the string macros
    are resolved and the enclosing braces or quotes removed (should decoding still raise, the entry becomes a
    failed block, named with its line)."""

    def __init__(self) -> None:
        super().__init__(decoder=decoder())

    def _transform_python_value_string(self, python_string: str) -> tuple[str, str]:
        try:
            return to_unicode(python_string), ""
        except Exception as exc:  # noqa: BLE001 - pylatexenc's errors: the entry is named, the file goes on
            return python_string, str(exc)
