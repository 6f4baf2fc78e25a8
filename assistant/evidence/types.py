"""The evidence stage's record for the judge: what is measured about one retrieved paper for one question
(:func:`assistant.evidence.relevance_evidence` fills it; every judge of :mod:`assistant.relevance` reads it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RelevanceEvidence:
    """Everything the judge looks at for one retrieved paper: one record, one verdict.

    The first five are measured on the paper (see the module docstring). The rest say how the
    question relates to it, set by the step that knows (None / False when they do not apply):

    - ``own_coverage``: for a follow-up, the idf-weighted share of the user's own content terms
      (reference and framing words left out) the paper holds; the label appended to a follow-up
      ("… (OmniMoE)") is no name match unless the paper also holds the user's words;
    - ``pointed_at``: the follow-up resolves to this paper (the top of the ranking conditioned on an
      earlier answer, and cited by it); ``bare_reference``: and it only points back ("tell me more
      about the second one");
    - ``list_share`` / ``list_bar``: for a candidate of a list, its evidence relative to the pool's
      best (assistant.relevance.listing.bar_scores) and the share it must reach (``ListBar.relative_bar``).
    """

    dense: float
    sentence: float
    bm25: float
    named_hit: bool
    coverage: float = 0.0
    features: np.ndarray | None = None
    """The learned judge's features (assistant.relevance.features.judge_features) with this paper as the best match."""
    own_coverage: float | None = None
    pointed_at: bool = False
    bare_reference: bool = False
    list_share: float | None = None
    list_bar: float | None = None
    definition: bool = False
    """The question asks what a named thing is ("What is SyPE?", assistant.question.analysis.is_definition_question), or
    for a synthesis its abstract states ("summarise it"; assistant.question.intents.what_it_is)."""
    probability: float | None = None
    """The relevance cross-encoder's calibrated P(this paper answers the question) (assistant.relevance.crossencoder),
    set when ``calibration.relevance.model`` names a model."""
