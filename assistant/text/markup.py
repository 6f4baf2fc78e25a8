"""Math and emphasis in abstracts, rendered at the edge: KaTeX in the page, Unicode in plain text.

Abstracts carry LaTeX (``10.9$\\times$``, ``45\\%``, ``$(\\varepsilon,\\delta)$``, ``\\textit{x}``) and
Markdown emphasis (``*VRU*``, ``**F**orget``). The stored text is never changed (citation checks compare
quotes with it); these functions only shape what a reader sees:

- :func:`plain` — Unicode text for the CLI and the Markdown export: math through flatlatex
  (``$\\times$`` → ``×``, ``$(\\varepsilon,\\delta)$`` → ``(ε, δ)``), ``\\%`` → ``%``, emphasis marks dropped.
- :func:`markdown` — Markdown for a Gradio Markdown/Chatbot with :data:`LATEX_DELIMITERS` (KaTeX,
  bundled with Gradio, so the page needs no network): math spans kept for KaTeX, text-mode LaTeX
  (``\\textit{x}``, ``\\%``) turned into Markdown, everything made inert (:func:`inert`).
- :func:`html` — escaped HTML with emphasis as ``<em>``/``<strong>``, math spans kept for KaTeX (for raw
  HTML inside a Markdown component, which Markdown does not parse but KaTeX does render).
"""

from __future__ import annotations

import html as _html
import re
from functools import lru_cache

LATEX_DELIMITERS = [{"left": "$$", "right": "$$", "display": True},
                    {"left": "$", "right": "$", "display": False}]
"""Gradio ``latex_delimiters``: ``$$…$$`` display and ``$…$`` inline math; :func:`markdown` and
:func:`html` rewrite ``\\(…\\)``/``\\[…\\]`` into these before the page sees them."""

_MATH = re.compile(r"\\\(.+?\\\)|\\\[.+?\\\]"  # \(…\) inline and \[…\] display, as LaTeX also writes them
                   r"|(?<!\\)(?:\$\$.+?(?<!\\)\$\$|\$(?!\s)[^$]+?(?<![\s\\])\$"
                   # "$ BOVText_{SOT} $": spaces inside, but LaTeX in it ("$5 and $10" has none: no math)
                   r"|\$[ \t]+(?=[^$\n]*[\\_^{])[^$\n]+?[ \t]+\$)", re.S)
_CODE = re.compile(r"(`[^`\n]*`|\\texttt\{[^{}]*\}|https?://[^\s()<>\"]+)")  # no en dash in code or a URL
_DASH = re.compile(r"(?<=[^\W_])--(?=[^\W_])")  # model--hardware: LaTeX's en dash between words
_TEXT_CMD = re.compile(r"\\(textit|emph|textbf|texttt|textsc|textsf|textrm|textsl|textup|textnormal|text|mathrm|url|"
                       r"underline|ul|mbox|footnote)\{([^{}]*)\}")
_DROPPED = re.compile(r"\s*\\(?:cite[pt]?|parencite|citeauthor|ref|eqref|label)\*?(?:\[[^\]]*\])*\{[^{}]*\}"
                      r"|\\(?:begin|end)\{[^{}]*\}|\\item\b\s*")
"""Commands a reader gains nothing from: citation keys, labels, list environments."""
_SWITCH = re.compile(r"\{\\(em|it|sl|bf|rm|sf|tt|sc)\s+([^{}]*)\}")
"""Old font switches: ``{\\em x}``."""
_COMMAND = re.compile(r"\\([A-Za-z]+)(\{[^{}]*\})?")
"""A backslash command and its first argument, if any: what no reader should see."""
_MD_LINK = re.compile(r"(?<!!)\[([^\[\]\n]+)\]\((https?://[^\s()<>\"]+)\)")  # [text](https://…) in an abstract
_HREF = re.compile(r"\\href\{([^{}]*)\}\{([^{}]*)\}")
_ESCAPED = re.compile(r"\\([%&#_$])")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*\\])\*(?![\w*])")


def split_math(text: str) -> list[tuple[bool, str]]:
    """``text`` as ``[(is_math, part)]`` in order; math parts keep their delimiters (``$``, ``$$``,
    ``\\(…\\)``, ``\\[…\\]``). A lone or escaped ``$`` (``\\$5``) is text."""
    out, pos = [], 0
    for m in _MATH.finditer(text):
        if m.start() > pos:
            out.append((False, text[pos : m.start()]))
        out.append((True, m.group(0)))
        pos = m.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out


_IMAGE = re.compile(r"!(?=\[)")


def _dollars(span: str) -> str:
    """A math span with ``$``/``$$`` delimiters: ``\\(x\\)`` → ``$x$``, ``\\[x\\]`` → ``$$x$$`` (the page's
    Markdown would eat the backslash of ``\\(`` before KaTeX sees it; ``$`` survives)."""
    if span.startswith("\\("):
        return "$" + span[2:-2].strip() + "$"
    if span.startswith("\\["):
        return "$$" + span[2:-2] + "$$"
    if not span.startswith("$$"):  # "$ x_{i} $": KaTeX's auto-render wants no space inside the dollars
        return "$" + span[1:-1].strip() + "$"
    return span


def _math_body(span: str) -> str:
    """A math span without its delimiters."""
    span = _dollars(span)
    return span[2:-2] if span.startswith("$$") else span[1:-1]


def _en_dash(text: str) -> str:
    """``--`` between words as an en dash (``model--hardware`` → ``model–hardware``), never inside code
    (a backtick span or ``\\texttt{…}``) or a URL."""
    return "".join(part if i % 2 else _DASH.sub("–", part) for i, part in enumerate(_CODE.split(text)))


def inert(text: str) -> str:
    """Untrusted text (abstracts, titles, LLM replies) made safe to put in Markdown the page renders:
    HTML is escaped, image syntax ``![alt](url)`` is broken (``!\\[``), so nothing in a paper or a
    reply can make the browser fetch a URL, and so is link syntax (``](`` → ``]\\(``), so a title
    such as ``[1](javascript:…)`` cannot pose as a citation link. The page adds its own links after."""
    return _IMAGE.sub("!\\\\", _html.escape(text, quote=False)).replace("](", "]\\(")


_SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ"))
"""Every letter Unicode has a subscript for (flatlatex's own table lacks ₕₖₗₘₙₚₛₜ: ``γ_t`` read ``γ[t]``)."""
_SCRIPT_CHARS = frozenset(_SUBSCRIPTS.values()) | frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᶲᵅᵝᵞᵟᶿᶥᵠᵡ∊")
_INLINE = {"_": frozenset("∞*∗"), "^": frozenset("*∗†′⊤")}
"""Scripts with no Unicode form that read right written after their base: ``ℓ_∞`` → ``ℓ∞``, ``x^*`` → ``x*``."""


def _script_base(base: str) -> str:
    """A base for a script: as it is when it is one symbol or already ends in a script (``xᵢ`` in
    ``x_i^2``: ``xᵢ²``, never ``(xᵢ)²``), else in parentheses."""
    import unicodedata

    plain_chars = [ch for ch in base if unicodedata.combining(ch) == 0]
    return base if len(plain_chars) <= 1 or plain_chars[-1] in _SCRIPT_CHARS else f"({base})"


def _ascii_script(mark: str, body: str) -> str:
    """A script with no Unicode form as readable ASCII: ``_t``, ``^R``, ``_{k=0}``."""
    return f"{mark}{body}" if len(body) == 1 else f"{mark}{{{body}}}"


def _indexed(base: str, sub: str) -> str:
    """``base_sub``: Unicode subscripts when every character has one, ``ℓ∞`` for an inline one, else ``_…``."""
    sub = sub.strip()
    if sub and all(ch in _SUBSCRIPTS for ch in sub):
        return _script_base(base) + "".join(_SUBSCRIPTS[ch] for ch in sub)
    if sub in _INLINE["_"]:
        return base + sub
    return base + _ascii_script("_", sub)


def _exponent(base: str, sup: str) -> str:
    """``base^sup``: Unicode superscripts when every character has one, else ``^…``."""
    from flatlatex import data
    from flatlatex.transliteration import transliterate

    sup = sup.strip()
    up, ok = transliterate(data.superscript)(sup)
    if ok and sup:
        return _script_base(base) + up
    if sup in _INLINE["^"]:
        return base + sup
    return base + _ascii_script("^", sup)


@lru_cache(maxsize=1)
def _converter():
    import flatlatex

    class Converter(flatlatex.converter):
        # flatlatex's own script rules (name-mangled): brackets for any subscript it has no table entry
        # for ("γ[t]", "ℓ[∞]") and parentheses around a base that already carries a script ("(xᵢ)²").
        def _converter__indexed(self, a, b):
            return _indexed(a, b)

        def _converter__exponent(self, a, b):
            return _exponent(a, b)

    conv = Converter()
    for cmd in (r"\newcommand\mathrm[1]{#1}", r"\newcommand\text[1]{#1}", r"\newcommand\textit[1]{#1}",
                r"\newcommand\textbf[1]{#1}", r"\newcommand\texttt[1]{#1}", r"\newcommand\emph[1]{#1}",
                r"\newcommand\operatorname[1]{#1}", r"\newcommand\ge{≥}", r"\newcommand\geq{≥}",
                r"\newcommand\big{}", r"\newcommand\Big{}", r"\newcommand\left{}", r"\newcommand\right{}",
                r"\newcommand\log{log\,}", r"\newcommand\exp{exp\,}", r"\newcommand\max{max\,}",
                r"\newcommand\min{min\,}"):
        conv.add_newcommand(cmd)
    return conv


# Short forms flatlatex does not know, and operator names whose spacing it drops.
_MATH_ALIASES = {"le": r"\leq", "ge": r"\geq", "ne": r"\neq", "to": r"\rightarrow", "gets": r"\leftarrow",
                 "lvert": "|", "rvert": "|", "lVert": "‖", "rVert": "‖", "top": "⊤"}
_MATH_ALIAS = re.compile(r"\\(" + "|".join(_MATH_ALIASES) + r")(?![A-Za-z])")
_OPERATOR_NAME = re.compile(r"\\(log|ln|exp|sin|cos|tan|det|dim|ker)(?![A-Za-z_^])")
_TEXT_IN_MATH = re.compile(r"\\(?:text|mathrm|textrm|operatorname)\{[^{}]*\}")


@lru_cache(maxsize=4096)
def math_plain(tex: str) -> str:
    """One math span (without its ``$``) as Unicode, e.g. ``\\mathcal{O}(r^2)`` → ``𝓞(r²)``,
    ``\\gamma_t`` → ``γₜ``, ``R_T \\le C\\sqrt{T \\log T}`` → ``R_T≤C√(T log T)`` (a script with no Unicode
    form as ``_T``, ``^{…}``: :func:`_indexed`, :func:`_exponent`). A command the converter does not know (an
    author's own macro, ``\\x``, ``\\frobnicate{x}``) reads as its argument, else its name, and the
    known ones around it are still converted: no backslash reaches a reader (tests/test_markup.py
    renders every bundled and training abstract)."""
    raw = tex.strip()
    body = _MATH_ALIAS.sub(lambda m: _MATH_ALIASES[m.group(1)], raw)
    body = _OPERATOR_NAME.sub(r"\\,\1\\,", body)  # flatlatex drops math spaces: "n \log n" → "nlog n"
    body = _TEXT_IN_MATH.sub(lambda m: m.group(0).replace(" ", "\u00a0"), body)
    body = body.replace(r"\{", "\ue000").replace(r"\}", "\ue001")  # literal braces, not groups
    # A script on a literal brace ("\{r/2^k\}_{k=0}^R") goes on an empty base after it: flatlatex would
    # take the brace into the script's parentheses ("{r/2ᵏ(}[k=0])ᴿ").
    body = re.sub("([\ue000\ue001])(?=[_^])", "\\1{}", body)
    # A command it does not know (an author's \\x, \\mathsf{A}) is replaced first by its argument,
    # else its name: left in, flatlatex either fails on the whole span or glues it to its argument.
    body = _COMMAND.sub(lambda m: m.group(0) if _known(m.group(1)) else _arg_or_name(m), body)
    out = _flat(body)
    if out is None:
        out = _COMMAND.sub(_arg_or_name, body)
    out = _COMMAND.sub(_arg_or_name, out).replace("\ue000", "{").replace("\ue001", "}")
    return re.sub(r",(?=\S)", ", ", " ".join(out.split()))  # (ε,δ) → (ε, δ): flatlatex drops the spaces math would set


@lru_cache(maxsize=2048)
def _known(name: str) -> bool:
    """True when flatlatex turns ``\\name`` (with an argument, if it takes one) into text without a backslash."""
    # With no, one or two arguments: \\alpha takes none, \\frac two (given one, flatlatex fails).
    outs = (_flat(f"\\{name}"), _flat(f"\\{name}{{a}}"), _flat(f"\\{name}{{a}}{{b}}"))
    return any(out is not None and not re.search(r"\\[A-Za-z]", out) for out in outs)


def _arg_or_name(m: re.Match) -> str:
    return m.group(2)[1:-1] if m.group(2) else m.group(1)



def _flat(body: str) -> str | None:
    """flatlatex's Unicode for one math body, or None when it cannot read it."""
    try:
        out = _converter().convert(body)
    except Exception:  # noqa: BLE001 - flatlatex raises on what it does not know (or recurses)
        return None
    return out.replace("\\,", " ").replace("\u00a0", " ")


def _text_mode(text: str, em: str, strong: str, code: str) -> str:
    """Text-mode LaTeX outside math: ``\\textit{x}`` → em-wrapped x, ``\\%`` → %, ``\\href{u}{t}`` → t."""
    def cmd(m: re.Match) -> str:
        name, body = m.group(1), m.group(2)
        if name in ("textit", "emph"):
            return f"{em}{body}{em}" if body else ""
        if name == "textbf":
            return f"{strong}{body}{strong}" if body else ""
        if name == "texttt":
            return f"{code}{body}{code}" if body else ""
        if name == "footnote":
            return f" ({body})" if body else ""
        return body

    def switch(m: re.Match) -> str:
        body = m.group(2)
        return f"{em}{body}{em}" if m.group(1) in ("em", "it", "sl") else f"{strong}{body}{strong}" \
            if m.group(1) == "bf" else body

    text = _en_dash(_SWITCH.sub(switch, _DROPPED.sub("", text)))  # before \\texttt{…} loses its marks

    # Innermost commands first, so \href{u}{\texttt{x}} and \textbf{\textit{x}} come out whole.
    for _ in range(4):
        text, n = _TEXT_CMD.subn(cmd, text)
        if not n:
            break
    text = _HREF.sub(_href_text, text)
    text = text.replace("``", "“").replace("''", "”")  # LaTeX quotes
    # A command still left is a math one written outside "$" (\mathcal{O}, \times: its Unicode) or an
    # author's own macro (\SCGPP: its argument, else its name): math_plain reads both.
    return _COMMAND.sub(lambda m: math_plain(m.group(0)), _ESCAPED.sub(r"\1", text))


def _href_text(m: re.Match) -> str:
    r"""``\href{url}{text}`` as "text (url)", or the URL alone when there is no other text: a code link
    is what a reader looks for."""
    url, label = m.group(1).strip(), m.group(2).strip()
    bare = label.strip("`*")
    return url if not bare or bare == url else f"{label} ({url})"


def _link_text(m: re.Match) -> str:
    """A Markdown link as plain text: its URL, after the text when the text is not the URL itself."""
    label, url = m.group(1), m.group(2)
    return url if label.strip() == url else f"{label} ({url})"


def plain(text: str) -> str:
    """Plain Unicode: ``10.9$\\times$`` → ``10.9×``, ``45\\%`` → ``45%``, ``$(\\varepsilon,\\delta)$`` →
    ``(ε, δ)``, ``*VRU*`` → ``VRU``, ``**F**orget`` → ``Forget``."""
    if not text:
        return text
    parts = []
    for is_math, part in split_math(text):
        if is_math:
            parts.append(math_plain(_math_body(part)))
        else:
            t = _MD_LINK.sub(_link_text, _text_mode(part, "", "", ""))
            parts.append(_EM.sub(r"\1", _STRONG.sub(r"\1", t)))
    return "".join(parts)


def markdown(text: str) -> str:
    """Untrusted text as inert Markdown for a component with :data:`LATEX_DELIMITERS`: text-mode LaTeX
    becomes Markdown emphasis, math spans stay for KaTeX (HTML-escaped like the rest)."""
    return "".join(inert(_dollars(part)) if is_math
                   else inert(_MD_LINK.sub(_link_text, _text_mode(part, "*", "**", "`")))
                   for is_math, part in split_math(text or ""))


def html(text: str) -> str:
    """Untrusted text as HTML: escaped, Markdown emphasis and text-mode LaTeX as ``<em>``/``<strong>``,
    Markdown links to http(s) URLs as ``<a target="_blank" rel="noopener noreferrer">``,
    math spans kept (escaped) for KaTeX, line breaks as spaces (a blank line would end the raw-HTML
    block a Markdown component passes through)."""
    out = []
    for is_math, part in split_math(text or ""):
        if is_math:
            out.append(_html.escape(_dollars(part), quote=False))
            continue
        t = _html.escape(_text_mode(part, "\x01", "\x02", "\x03"), quote=False)
        t = re.sub("\x01(.*?)\x01", r"<em>\1</em>", t)
        t = re.sub("\x02(.*?)\x02", r"<strong>\1</strong>", t)
        t = re.sub("\x03(.*?)\x03", r"<code>\1</code>", t)
        t = _EM.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>", t))
        # [text](https://…) as a real link (escaped above; opens in a new tab, no window.opener)
        out.append(_MD_LINK.sub(r'<a href="\2" target="_blank" rel="noopener noreferrer">\1</a>', t))
    return re.sub(r"[\r\n]+", " ", "".join(out))
