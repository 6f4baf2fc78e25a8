"""The five conversations of issue 33 (items 1–3), as a new user had them, with what each turn must now show.
Shared by the CLI test (tests/test_cli.py, ``paper-assistant chat``) and the browser test
(tests/test_browser_workflows.py, the page's chat), so both faces are held to the same answers.

Each conversation: its turns, then checks ``(turn index, texts it shows, texts it must not show, cited paper ids
in order or None)``. Texts are what both faces show alike: the answer's words, the comparison's heading and facet
names, the notes and the verdict's words."""

from __future__ import annotations

VLA, DIFFUSION_THEORY = "004_9268713af81d21d3#10", "000_12a0d7b1c5c902c5#7"
KITE, SYPE = "004_9268713af81d21d3#18", "000_12a0d7b1c5c902c5#15"
STEERING, TRAITS = "000_12a0d7b1c5c902c5#10", "000_12a0d7b1c5c902c5#14"

SIDE_BY_SIDE = "Side by side, in each abstract's own words"
COMPARISON_NEEDS_LLM = "A written comparison needs an LLM, and none is set (docs/llm.md says how to set one)"
ANSWER_NEEDS_LLM = "A written answer needs an LLM, and none is set (docs/llm.md says how to set one)"
CLOSEST = "Closest match, may not answer the question."

CONVERSATIONS = {
    # Item 1: "compare it with the first one" showed one sentence of the first paper, no comparison, no reason.
    "compare-it-with-the-first-one": (
        ["Which papers make diffusion or transformer models faster at inference time?",
         "tell me more about the second one", "what speedup does it report?", "compare it with the first one"],
        [(2, ["2.9"], [], [VLA]),
         (3, [SIDE_BY_SIDE, "task", "method", "results", "they differ in", COMPARISON_NEEDS_LLM,
              "Second, using fine-grained SM tracing", "first convergence analysis"], [], [VLA, DIFFUSION_THEORY])]),
    # Items 1 and 2: "another forecasting paper" answered KITE again; SyPE sat under "also retrieved".
    "another-paper-compared-with-a-named-one": (
        ["What is KITE?", "is there another forecasting paper? compare it with KITE"],
        [(1, ["Left out as already discussed: KITE.", "StretchTime", SIDE_BY_SIDE, COMPARISON_NEEDS_LLM,
              "Knowledge-Guided Conditioning"], [], [SYPE, KITE])]),
    # Item 2: "they" switched papers; a detail in neither abstract was answered with no hedge.
    "they-stays-on-the-paper-in-focus": (
        ["Is there a paper that makes an LLM take on a chosen personality without retraining it?",
         "how do they check that the personality actually changed?", "which base model did they use?"],
        [(1, ["LLM-as-a-judge", "Big Five"], [CLOSEST], [STEERING]),
         (2, [CLOSEST, "does not appear to give this"], [], [STEERING])]),
    # Item 3: the components question quoted the bottleneck sentence, not the sentences naming the components.
    "components-quote-the-sentences-that-name-them": (
        ["What is KITE?", "what are its two main components?"],
        [(1, ["History-Conditional Manifold", "Knowledge-Guided Conditioning", ANSWER_NEEDS_LLM],
          ["two key bottlenecks", CLOSEST], [KITE])]),
    # Items 1 and 3: a summary and "how does it differ" without an LLM said nothing of needing one.
    "summary-and-difference-say-they-need-an-llm": (
        ["What is KITE?", "summarise it", "how does it differ from SyPE?"],
        [(1, ["We propose KITE", "Extensive experiments demonstrate that KITE outperforms", ANSWER_NEEDS_LLM],
          [CLOSEST], [KITE]),
         (2, [SIDE_BY_SIDE, COMPARISON_NEEDS_LLM, "symplectic group"], [], [KITE, SYPE])]),
}
