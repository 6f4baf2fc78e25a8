"""Paper records: the :class:`Paper` model every loader makes, what is read from its text (the display
label, :func:`derive_label`; the code and project links, :func:`code_links`), the loaders' error
(:class:`CorpusError`) and the wording of counts.

The loaders, one module per format: :mod:`vectorstore.papers.format_txt` (paper-list text files),
:mod:`vectorstore.papers.format_jsonl` (JSONL records), :mod:`vectorstore.papers.format_bibtex` (BibTeX),
:mod:`vectorstore.papers.format_csv` (CSV with a header), :mod:`vectorstore.papers.format_arxiv` (arXiv metadata
snapshot lines); :mod:`vectorstore.papers.files` (files and folders, each by its format).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field


class CorpusError(ValueError):
    """A paper file that cannot be read; the message names the file (and line) and the problem."""


class Paper(BaseModel):
    """One abstract, the unit that answers cite."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1, description="the abstract as in the source file (in a BibTeX entry or arXiv record: LaTeX accents as Unicode)")
    title: str = ""
    label: str = Field("", description="short display name, e.g. 'OmniMoE'")
    authors: list[str] = Field(default_factory=list)
    venue: str = ""
    year: int | None = None
    url: str = ""
    source: str = Field("", description="file the paper came from (file name only)")
    categories: list[str] = Field(default_factory=list,
                                  description="subject categories as the source gives them, e.g. arXiv's ['cs.LG', 'stat.ML']")
    bibtex: dict[str, str] = Field(default_factory=dict, description=(
        "the BibTeX entry the paper was read from (a .bib file; else empty): its fields as read, LaTeX as Unicode, "
        "with 'ENTRYTYPE' and 'ID' (the citation key), so an export writes the entry back"))

    def display(self) -> str:
        """Label for lists and citations: title if known, else the derived label."""
        return self.title or self.label or self.id

    def searchable(self) -> str:
        """Title and abstract, for matching words ("Which paper is titled …?"); the abstract alone if untitled."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    @property
    def links(self) -> list[str]:
        """The code and project links the abstract gives, as written (:func:`code_links`)."""
        return code_links(self.text)


_URL = re.compile(r"https?://[^\s<>\"'{}\\`\[\]]+", re.I)
CODE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "huggingface.co", "sourceforge.net",
              "github.io", "gitlab.io", "colab.research.google.com", "zenodo.org", "kaggle.com")
"""Hosts of code, models and project pages: a link to one is a "code" link, any other a project page."""


def code_links(text: str) -> list[str]:
    """The http(s) URLs an abstract gives (bare, ``\\url{…}``, ``\\href{…}{…}``, ``[…](…)``), in order and
    once each, with the sentence punctuation after them and an unbalanced closing bracket cut off.
    Abstracts link their code, models, data or project page; nothing else links from an abstract."""
    out: list[str] = []
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(".,;:!?*_~")
        while url and url[-1] in ")]" and url.count(url[-1]) > url.count("(" if url[-1] == ")" else "["):
            url = url[:-1].rstrip(".,;:!?")
        if len(url) > len("https://") + 3 and url not in out:
            out.append(url)
    return out


def is_code_link(url: str) -> bool:
    """True for a link to a code, model or project host (:data:`CODE_HOSTS`)."""
    host = re.sub(r"^https?://(?:www\.)?", "", url.lower()).split("/")[0]
    return any(host == h or host.endswith("." + h) for h in CODE_HOSTS)


# --- labels ------------------------------------------------------------------------------------
_INTRO_VERB = re.compile(
    # "we propose X", "We therefore propose X", "we reformulate … and present X"
    r"\b[Ww]e\s+(?:[^.;]{0,120}?\s(?:and|then)\s+)?"
    r"(?:(?:first|then|also|further|therefore|thus|hence|here|now|finally|additionally|instead|next)\s+)?"
    r"(?:introduce|propose|present|develop|design|build|construct|release|call)\b"
    r"|\bby\s+(?:introducing|proposing|presenting|developing|designing)\b"
)
_MARKUP = re.compile(r"\\(?:textbf|textit|emph|texttt|textsc)\{([^{}]*)\}")
_PAREN_ACRONYM = re.compile(r"\((?P<name>\*{0,2}[A-Z][A-Za-z0-9-]*[A-Z0-9][A-Za-z0-9-]*)\*{0,2}\)")
_NAMED = re.compile(r"\b(?:called|named|dubbed|termed)\s+(?P<name>[A-Z][\w-]+)")
_CAPWORD = re.compile(r"(?<![\w-])(?P<name>[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*)(?![\w-])")
_GENERIC = {
    "LLM", "LLMs", "AI", "RL", "VLM", "VLMs", "MLLM", "MLLMs", "RM", "RMs", "CT", "GPU", "GPUs", "NLP",
    "CNN", "CNNs", "API", "SOTA", "MoE", "LLMs'", "GRPO", "PPO", "DPO", "CLIP", "ViT", "QA", "3D", "2D",
}


_CONTRIBUTION_VERBS = ("introduce|propose|present|develop|design|devise|build|construct|release|provide|offer|derive|"
                       "establish|formulate|study|investigate|analy[sz]e|characteri[sz]e|explore|examine|address|tackle",
                       "consider|solve")
"""Verbs whose object names the contribution ("we propose", "this paper provides", "we systematically characterize"),
then weaker ones read only when no sentence has a first one ("this work considers", "we solve"); never "we
show/find/prove" (results: a "that" clause) nor "we discuss" (steps)."""
_SUBJECT = (r"\b(?:[Ww]e|[Tt]his (?:paper|work|study)|[Oo]ur (?:paper|work))\s+"
            r"(?:(?:first|then|also|further|therefore|thus|hence|here|now|finally|additionally|instead|next|"
            r"systematically|formally|theoretically|empirically|carefully|comprehensively)\s+)?"
            r"(?:(?:seek|aim|set out|try|attempt)\s+to\s+)?")
_CONTRIBUTION = [re.compile(_SUBJECT + rf"(?:{verbs})s?\s+") for verbs in _CONTRIBUTION_VERBS]
_HARD_END = re.compile(r"\s*[;:!?]|\.(?=\s|$)|,\s+(?=(?:which|that|where|whose|while|and|or|but|to|by|with|as|in|on|"
                       r"for|from|a|an|the|we|it|thus|thereby|i\.e\.|e\.g\.)\b|\w+(?:ing|ed)\b)|\s+and\s+(?=(?:show|"
                       r"demonstrate|prove|evaluate|apply|find|establish|provide|propose|present|introduce|derive|develop|"
                       r"give|obtain|use|study|analy[sz]e)\b)")
_SOFT_END = re.compile(r"\s+(?=(?:that|which|where|whose|to|via|by|using|through|under|based on|so that|such that|"
                       r"in order|thereby|whereby|while)\b)")
_TRAILING = {"a", "an", "the", "of", "for", "in", "on", "with", "and", "or", "to", "from", "at", "as", "its", "their", "our"}
_CUT_BEFORE = {"for", "in", "on", "with", "of", "under", "over", "across", "into", "within", "between", "at"}


def contribution_phrase(text: str, max_words: int = 10) -> str:
    """What an untitled abstract says it contributes, from its first contribution sentence (:data:`_CONTRIBUTION`):
    the words after the verb up to a clause boundary (a "that", "to", "via" only once four words are read: "a
    novel method to estimate intrinsic dimensionality"), at most ``max_words`` (cut before a preposition, no
    dangling "of"), e.g. "a knowledge-guided probabilistic modeling framework"; "" when no sentence states one
    in two words or more."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    for verb in _CONTRIBUTION:
        for sentence in sentences:
            phrase = _phrase(sentence, verb, max_words)
            if phrase:
                return phrase
    return ""


def _phrase(sentence: str, verb: re.Pattern, max_words: int) -> str:
    """:func:`contribution_phrase` of one sentence ("" when it states none)."""
    for m in verb.finditer(sentence):
        rest = sentence[m.end():]
        hard = _HARD_END.search(rest)
        rest = rest[: hard.start()] if hard else rest
        soft = next((e for e in _SOFT_END.finditer(rest) if len(rest[: e.start()].split()) >= 4), None)
        if len(rest.split()) > max_words:  # too long to read whole: any "that", "to", "via" ends it
            soft = soft or _SOFT_END.search(rest)
        words = (rest[: soft.start()] if soft else rest).replace("*", "").split()
        if len(words) > max_words:  # cut before a preposition that fits: no "on generic nonconvex"
            words = words[:max_words]
            words = words[:next((i for i, w in enumerate(words) if w in _CUT_BEFORE and i >= 4), len(words))]
        while words and words[-1].lower().strip(",") in _TRAILING:
            words.pop()
        phrase = " ".join(words).rstrip(",")
        clause = words and words[0].lower() in ("that", "how", "whether", "why", "if", "what", "when")
        if len(words) >= 2 and not clause and phrase.count("(") == phrase.count(")") and phrase.count("$") % 2 == 0:
            return phrase
    return ""


def _direct_names(rest: str) -> list[str]:
    """Names a contribution verb introduces itself, read in ``rest`` (what follows the verb): an acronym in
    parentheses within 8 words ("we propose Unlearning to Align (U2A)"), "called X", or the capitalised words
    right after it ("we present World Shaper"); not an acronym merely mentioned ("a framework for VLA")."""
    names = [m.group("name").strip("*-,.") for m in _PAREN_ACRONYM.finditer(rest) if len(rest[: m.start()].split()) <= 8]
    names += [m.group("name").strip("*-,.") for m in _NAMED.finditer(rest)]
    # A name's capitalized words after it are part of it: "we present FlashMoE Lite" names FlashMoE Lite.
    m = re.match(r"\s*(?:a|an|the)?\s*(?P<name>(?:[A-Z][a-z]+[\s-]){1,4}[A-Z][a-z]+|(?:[A-Z][\w-]*[A-Z0-9][\w-]*|"
                 r"[A-Z][a-z]+[A-Z][\w-]*)(?<!-)(?: [A-Z][A-Za-z0-9]*(?![\w-])){0,2})(?![\w-])", rest)
    if m:
        names.append(m.group("name").rstrip("-"))
    return names


def derive_label(text: str, max_words: int = 6, describe: bool = True) -> str:
    """A short display label for an untitled abstract: the name it introduces, else what it says it contributes,
    else its first words.

    Heuristics, in order: "we introduce/propose X" where X looks like a name (capitals inside a
    word, e.g. "OmniMoE", "Reward Auditor" is caught by the title-case variant); "called/named X";
    else the contribution sentence's own words (:func:`contribution_phrase`: "a unified framework for
    constrained diffusion models", never an acronym it merely mentions, "VLA"); else the most frequent
    non-generic capitalised token; otherwise the first ``max_words`` words + "…". Without ``describe``, no
    contribution phrase (:func:`name_to_ask_by`). Returns a non-empty string for non-empty text.
    """
    # Text-mode markup is no part of a name: "we propose \\textbf{MapGR} (…)" introduces MapGR.
    head = _MARKUP.sub(r"\1", " ".join(text.split()))
    # The sentences that introduce the contribution carry the name. A name the verb introduces
    # itself ("we propose Unlearning to Align (U2A)", "we present World Shaper", "called X") beats
    # one merely mentioned there ("we propose a framework linking PA with …"); among equals, the one
    # the abstract repeats most, then the first found.
    direct: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", head):
        verb = _INTRO_VERB.search(sentence)
        if verb:
            direct += _direct_names(sentence[verb.end():])
    names = [c for c in dict.fromkeys(direct) if c and c not in _GENERIC]
    if names:
        uses = {c: len(re.findall(rf"(?<![\w-]){re.escape(c)}(?![\w-])", head)) for c in names}
        return max(names, key=lambda c: (uses[c], -names.index(c)))
    phrase = contribution_phrase(head) if describe else ""
    if phrase:
        return phrase
    counts: dict[str, int] = {}
    for m in _CAPWORD.finditer(head):
        name = m.group("name").rstrip("-")
        if name not in _GENERIC and not name.endswith("s'") and len(name) > 2:
            counts[name] = counts.get(name, 0) + 1
    if counts:
        best = max(counts.items(), key=lambda kv: (kv[1], -head.find(kv[0])))
        if best[1] >= 2:
            return best[0]
    words = head.split()
    label = " ".join(words[:max_words])
    # Scripts without spaces between words (Chinese, Japanese) would make the whole abstract one "word".
    cut = 48
    if len(label) > cut:
        return label[:cut].rstrip() + "…"
    return label + ("…" if len(words) > max_words else "")


def name_to_ask_by(label: str, text: str) -> str:
    """``label`` as a follow-up names its paper in the question the judge reads ("… (OmniMoE)"): itself, unless it
    is :func:`derive_label`'s description of the untitled abstract ``text`` (its :func:`contribution_phrase`, "a
    parameter-efficient framework for …"), which says what the abstract says and so made any question about the
    paper read as answered ("which base model did they use?" of an abstract naming none: P 0.80); then the label
    without the description, a name the abstract repeats or its opening words ("Aligning Large Language Models
    (LLMs) with…", P 0.036). ``text`` "" (unknown): ``label``."""
    if label and text and label == contribution_phrase(_MARKUP.sub(r"\1", " ".join(text.split()))):
        return derive_label(text, describe=False)
    return label


def counted(n: int, noun: str) -> str:
    """``"1 paper"``, ``"3 papers"``: a count with its noun (plural by an added s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
