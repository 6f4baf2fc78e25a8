"""Whether a question reads as English, the language of the abstracts it is matched against: a fixed rule over
the question's own words (no model, no word lists of the index), so the same question gets the same answer
on any index.

The rule, in two steps over the question's letters (a token is a run of letters of one word, and each
character of a script written without spaces, Han, kana or Hangul):

1. Script: it does not read as English when at least half of its tokens are in another script than Latin ("注意力机制的成本？", "什么是 mixture-of-experts？", "Τι είναι το SyPE;"). A lone letter of another
   alphabet is a symbol, not a word ("What does β control?"), and does not count.
2. Words, for Latin script: it does not read as English when it holds two or more marks of another language
   and more of them than English function words ("the", "which", "of", …). A mark is a lower-case function
   word of French, German, Spanish, Italian, Portuguese or Dutch that is no English word ("une", "welche",
   "qué"), the same as the question's first word ("Comment …", "Quels …"), or a lower-case word with a
   non-ASCII letter ("accélérer", "étudient"). Capitalised words are names ("Fréchet", "Rényi") and name
   particles ("van der", "de la", "le") are left out, so English questions naming people stay English; a
   search-box query with no function word ("V4D Kinetics-400 top-1 accuracy") reads as English.

Not caught: another Latin-script language outside these six with few accents (Indonesian, Swahili), and a
short question with one mark ("Quais artigos estudam modelos de linguagem?", "Welke papers gaan over MoE?").
"""

from __future__ import annotations

import re
import unicodedata

FOREIGN_NOTE = "Questions are matched against English abstracts; this one does not read as English."

_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"  # kana, Han, Hangul
_LETTERS = rf"[^\W\d_{_UNSPACED}]+"
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
_TOKEN = re.compile(rf"[{_UNSPACED}]|{_LETTERS}")  # step 1: "mixture-of-experts" is three tokens
_WORD = re.compile(rf"{_LETTERS}(?:-{_LETTERS})*")  # step 2: one word ("of" in it is no function word)

_ENGLISH = frozenset(
    "the of a an and or in on for to with by from at as is are was were be been being does do did which what how why "
    "who whom whose when where that this these those than then it its their they there we our us can could should "
    "would will not no any all some more most such between about into over under both each other only also has have "
    "had if papers paper".split())
"""English function words (and "paper", which most questions here hold)."""

_FOREIGN = frozenset(
    # French
    "les une est sont pour dans que qui quel quelle quels quelles avec sur aux ce cette ces il elle ils nous "
    "vous leur leurs où mais ou qu est-ce peut moins comment pourquoi quoi combien "
    # German
    "die das und ist mit welche welcher welches werden wird sind eine einer einen nicht auf für als zu im dem sich "
    "bei oder aus wie warum wer "
    # Spanish
    "el los las una por para qué cómo es del se con cuál cuáles cuántos estos esta este lo sus "
    # Italian
    "il gli della delle che sono quale quali questo questa nel nella perché "
    # Portuguese
    "os uma não quais qual são das como "
    # Dutch
    "een het zijn voor welke hoe wat niet ook bij".split())
"""Frequent function words of French, German, Spanish, Italian, Portuguese and Dutch that are no English word
(the English "per", "come", "was", "son", "par", "plus", "et" of "et al." left out) and no name particle (van, der, de, la, le, des, di)."""


def _latin(token: str) -> bool:
    return all(not c.isalpha() or unicodedata.name(c, "").startswith("LATIN") for c in token)


def reads_as_english(text: str) -> bool:
    """True when ``text`` (a question) reads as English by the rule in this module's docstring; True for a
    text with no letters."""
    text = unicodedata.normalize("NFKC", text)  # fullwidth Latin is Latin
    tokens = [t for t in _TOKEN.findall(text) if len(t) > 1 or _UNSPACED_CHAR.fullmatch(t)]
    if tokens and sum(not _latin(t) for t in tokens) * 2 >= len(tokens):
        return False
    words = [w for w in _WORD.findall(text) if _latin(w)]
    english = sum(w.lower() in _ENGLISH for w in words)
    marks = sum(w in _FOREIGN or not w.isascii() and w.islower() for w in words)
    if words and not words[0].islower() and words[0].lower() in _FOREIGN:
        marks += 1  # "Quels articles …", "Welche Arbeit …": a question's first word is capitalised
    return not (marks >= 2 and marks > english)
