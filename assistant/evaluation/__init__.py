"""``paper-assistant eval``: the harness and its report (``harness``), what each question adds to it (``tally``),
ranking metrics (``metrics``) and related-work quality on CSFCube (``csfcube``).

Imports: ``learning`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "harness": ("eval_command",),
})
