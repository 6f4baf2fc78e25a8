"""Reading JSONL files (one JSON object a line): paper collections and question files share it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


class JsonlError(ValueError):
    """A line of a JSONL file that is not a JSON object. The message is ``<path>:<line>: <problem>``;
    ``path``, ``line_no`` (1-based) and ``problem`` are kept for callers with messages of their own."""

    def __init__(self, path: str | Path, line_no: int, problem: str):
        super().__init__(f"{path}:{line_no}: {problem}")
        self.path, self.line_no, self.problem = path, line_no, problem


def iter_jsonl(path: str | Path, text: str | None = None) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of the JSONL file ``path``, in file order;
    line numbers are 1-based and count blank lines. ``text``: the file's content, already read (and
    checked) by the caller; by default the file is read as UTF-8 (a BOM dropped; UnicodeDecodeError
    on invalid bytes).

    Records end at "\\n" only ("\\r\\n" leaves a "\\r", which JSON reads as whitespace):
    ``str.splitlines()`` would also split inside a string at U+2028, U+2029, U+0085 and other breaks
    that JSON (and ``json.dumps(ensure_ascii=False)``) leaves unescaped. Raises :class:`JsonlError`
    for a line that is not valid JSON or not an object, when the iteration reaches it.
    """
    if text is None:
        text = Path(path).read_text(encoding="utf-8-sig")
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise JsonlError(path, line_no, f"invalid JSON ({exc.msg})") from exc
        except RecursionError as exc:  # a value nested thousands deep: this file only, not the whole ingest
            raise JsonlError(path, line_no, "invalid JSON (nested too deeply)") from exc
        if not isinstance(record, dict):
            raise JsonlError(path, line_no, f"expected a JSON object, got {type(record).__name__}")
        yield line_no, record
