"""Named steps: each step of the answer path logs its name and duration (logger ``assistant.answer.pipeline``,
DEBUG), so a trace reads like the list of steps in assistant/answer/pipeline.py."""

from __future__ import annotations

import functools
import logging
import time

log = logging.getLogger("assistant.answer.pipeline")


def step(fn):
    """Log the decorated step's name (the function's) and its duration in ms, also when it raises."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            log.debug("step %s %.1f ms", fn.__name__, 1000 * (time.perf_counter() - started))
    return run
