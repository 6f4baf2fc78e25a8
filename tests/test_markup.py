"""Math and emphasis at the edge (assistant.text.markup): plain Unicode for the CLI/exports, KaTeX-ready
Markdown/HTML for the page. No model needed."""

from __future__ import annotations

from assistant.text import markup
def test_plain_renders_the_corpus_math_as_unicode():
    assert markup.plain(r"a 10.9$\times$ speed-up") == "a 10.9× speed-up"
    assert markup.plain(r"a 45\% cut") == "a 45% cut"
    assert markup.plain(r"$(\varepsilon,\delta)$-unlearning") == "(ε, δ)-unlearning"
    assert markup.plain(r"from $O(N)$ to $O(\sqrt{N})$") == "from O(N) to O(√N)"
    assert markup.plain(r"group $\mathrm{Sp}(2,\mathbb{R})$") == "group Sp(2, ℝ)"
    assert markup.plain(r"$\chi^2$ test") == "χ² test"


def test_plain_drops_emphasis_marks_and_text_mode_latex():
    assert markup.plain("the *VRU* algorithm and the **F**orget **I**t") == "the VRU algorithm and the Forget It"
    assert markup.plain(r"we \textit{localize} and \textbf{answer}") == "we localize and answer"
    assert markup.plain(r"code at \url{http://127.0.0.1/a}") == "code at http://127.0.0.1/a"
    # multiplication and a lone dollar are text, not emphasis or math
    assert markup.plain("a * b and $5 each") == "a * b and $5 each"


def test_plain_never_raises_on_latex_it_cannot_read_and_leaves_no_command():
    """A command the converter does not know (an author's own macro) reads as its argument, else its
    name; the known ones around it are still converted ("R_T \\le C" stays "R_T≤C", not "leC")."""
    out = markup.plain(r"radii $\{r/2^k\}_{k=0}^R$ and $\unknowncmd{x}$ and $\mathsf{A} \le \eps$")
    assert "r/2ᵏ" in out and "and x and" in out and "A≤eps" in out and "\\" not in out


def test_split_math_keeps_delimiters_and_ignores_escaped_dollars():
    assert markup.split_math(r"x $a_i$ y \$3 z") == [(False, "x "), (True, "$a_i$"), (False, r" y \$3 z")]
    assert markup.split_math("$$E=mc^2$$") == [(True, "$$E=mc^2$$")]


def test_html_escapes_text_renders_emphasis_and_keeps_math_for_katex():
    out = markup.html(r"10.9$\times$ and *VRU* <script>x</script> 45\% $a<b$" + "\n\nnext")
    assert r"10.9$\times$" in out and "<em>VRU</em>" in out and "45%" in out
    assert "<script>" not in out and "&lt;script&gt;" in out and "$a&lt;b$" in out
    assert "\n" not in out  # a blank line would end the Markdown panel's raw-HTML block


def test_markdown_keeps_math_and_is_inert():
    out = markup.markdown(r"![x](http://127.0.0.1/p.png) 10.9$\times$ \textit{span} <b>")
    assert r"10.9$\times$" in out and "*span*" in out and "&lt;b&gt;" in out and "![" not in out


def test_cli_text_and_markdown_export_show_unicode(tmp_path):
    from assistant.research.export import ExportItem, to_markdown
    from vectorstore.papers import Paper

    p = Paper(id="f#1", text=r"We get 10.9$\times$ with $(\varepsilon,\delta)$ and *VRU*.", title=r"Fast $\times$ models")
    md = to_markdown([ExportItem(1, p, p.text)])
    assert "10.9×" in md and "(ε, δ)" in md and "Fast × models" in md and "$" not in md


def test_paren_and_bracket_math_render_like_dollars():
    assert markup.plain(r"a \(2.9\times\) speedup") == "a 2.9× speedup"
    assert markup.plain(r"\[E=mc^2\] holds") == "E=mc² holds"
    assert markup.split_math(r"x \(a_i\) y") == [(False, "x "), (True, r"\(a_i\)"), (False, " y")]
    # the page gets $…$ (Markdown would eat the backslash of \( before KaTeX saw it)
    assert r"$2.9\times$" in markup.markdown(r"a \(2.9\times\) speedup")
    assert r"$$E=mc^2$$" in markup.html(r"\[E=mc^2\]")


def test_double_hyphen_between_words_is_an_en_dash_outside_math_and_code():
    assert markup.plain("model--hardware co-design") == "model–hardware co-design"
    assert "model–hardware" in markup.markdown("the model--hardware gap")
    assert "model–hardware" in markup.html("the model--hardware gap")
    assert "`a--b`" in markup.markdown("run `a--b` now") and r"\texttt" not in markup.plain(r"\texttt{a--b}")
    assert markup.plain(r"\texttt{a--b}") == "a--b"
    assert markup.plain("a -- b and --flag") == "a -- b and --flag"


def test_markdown_links_in_abstracts_are_real_links_in_html_and_text_elsewhere():
    text = "Code is available at [https://127.0.0.1/a/b--c](https://127.0.0.1/a/b--c)."
    out = markup.html(text)
    assert ('<a href="https://127.0.0.1/a/b--c" target="_blank" rel="noopener noreferrer">'
            "https://127.0.0.1/a/b--c</a>.") in out
    assert "](" not in out
    assert markup.plain(text) == "Code is available at https://127.0.0.1/a/b--c."
    assert markup.plain("see [our site](https://127.0.0.1/p)") == "see our site (https://127.0.0.1/p)"
    assert "](" not in markup.markdown(text)
    assert "https://127.0.0.1/a/b--c" in markup.markdown(text)
    # only http(s): a javascript: link stays inert text
    assert "<a " not in markup.html("[x](javascript:alert(1))")


def test_sources_panel_shows_an_abstract_link_as_a_link():
    import assistant.page as app
    from assistant.types import Source

    url = "https://127.0.0.1/a/b"
    s = Source(n=1, paper_id="f#1", label="X", abstract=f"Code is available at [{url}]({url}).")
    out = app.source_html(s)
    assert f'<a href="{url}" target="_blank" rel="noopener noreferrer">{url}</a>' in out
    assert "](" not in out


def test_image_syntax_is_not_taken_for_a_link():
    out = markup.markdown("![chart](http://127.0.0.1/p.png)")
    assert "chart (http" not in out  # not turned into "text (url)"
    assert "![" not in out  # the image syntax is not shown raw
    assert "](" not in out
    assert "<a " not in markup.html("![chart](http://127.0.0.1/p.png)")


def test_math_common_forms_read_right_and_unknown_commands_give_their_argument():
    from assistant.text.markup import math_plain

    assert math_plain(r"R_T \le C\sqrt{T \log T}") == "R_T≤C√(T log T)"  # \le, and the space before log
    assert math_plain(r"f: \mathcal{X} \to \mathcal{Y}") == "f:𝓧→𝓨"
    assert math_plain(r"O(n \log n)") == "O(n log n)"
    assert math_plain(r"\text{foo bar}") == "foo bar"
    assert math_plain(r"\frobnicate{x} + 1") == "x+1"  # unknown: its argument (never "frobnicatex + 1")
    # a fraction keeps its denominator; a script on a literal brace stays after the brace
    assert math_plain(r"\tilde{\mathcal{O}}\big(\frac{d \log N}{\Delta^2}\big)") == "𝓞̃((d log N)/(Δ²))"
    assert math_plain(r"\{r/2^k\}_{k=0}^R") == "{r/2ᵏ}ₖ₌₀ᴿ"


def test_scripts_are_unicode_where_it_exists_else_plain_ascii_never_brackets():
    """Issue 33 (6): flatlatex wrote a subscript it has no table entry for in brackets ("γ[t]", "ℓ[∞]") and put
    parentheses around a base that already carries a script ("{r/2ᵏ}([k=0])ᴿ", "(xᵢ)²")."""
    from assistant.text.markup import math_plain

    assert markup.plain(r"a step size $\gamma_t$ and the $\ell_\infty$ ball") == "a step size γₜ and the ℓ∞ ball"
    assert math_plain(r"\ell_{\infty}") == "ℓ∞"
    assert math_plain(r"x_{i}^{2} + h_{t-1} + a_{\max}") == "xᵢ²+hₜ₋₁+aₘₐₓ"
    assert math_plain(r"W_{\theta}") == "W_θ"  # no subscript θ in Unicode: readable ASCII
    assert math_plain(r"e^{-\lambda t}") == "e^{-λt}"
    assert math_plain(r"x^* \text{ and } A^{\top}") == "x* and A⊤"
    assert math_plain(r"\sum_{i=1}^n x_i") == "∑ᵢ₌₁ⁿxᵢ"


LEFT_COMMAND = __import__("re").compile(r"\\[A-Za-z]+")
ALLOWED_LEFTOVERS: frozenset[str] = frozenset()
"""Backslash commands a rendering may still show. Empty: a command nothing converts (an author's own
macro) reads as its argument, else its name (assistant.text.markup.math_plain and _leftover)."""


def _left_in(rendered: str, page: bool) -> set[str]:
    # The page keeps math spans for KaTeX, which renders them: only the text around them counts there.
    text = "".join(part for is_math, part in markup.split_math(rendered) if not is_math) if page else rendered
    return set(LEFT_COMMAND.findall(text)) - ALLOWED_LEFTOVERS


def _bad_renderings(texts: list[str]) -> dict[str, list[str]]:
    bad = {}
    for t in texts:
        left = _left_in(markup.plain(t), False) | _left_in(markup.markdown(t), True) | _left_in(markup.html(t), True)
        if left:
            bad[t[:60]] = sorted(left)
    return bad


def test_every_bundled_abstract_renders_without_a_backslash_command():
    """`\\href{…}{\\texttt{…}}` (MapGR) showed raw in the Sources panel and `ask --abstracts`; `$ BOVText_{SOT} $`
    with spaces inside the dollars printed raw in the CLI."""
    from tests.conftest import CORPUS
    from vectorstore.papers import load_papers

    texts = [p.text for p in load_papers([CORPUS])]
    assert len(texts) == 38 and _bad_renderings(texts) == {}
    mapgr = next(t for t in texts if r"\href" in t)
    assert "https://github.com/" in markup.plain(mapgr) and r"\texttt" not in markup.html(mapgr)  # text, never fetched
    bov = next(t for t in texts if "BOVText" in t)
    assert "on BOVText_{SOT}." in markup.plain(bov)


def test_every_training_abstract_renders_without_a_backslash_command():
    import json

    from tests.conftest import SHARED, needs_shared

    corpus2k = SHARED / "eval" / "train" / "corpus2k.jsonl"
    needs_shared(corpus2k)
    texts = [json.loads(line)["abstract"] for line in corpus2k.read_text().splitlines() if line.strip()]
    assert len(texts) == 2000 and _bad_renderings(texts) == {}
