"""An index without papers: the question path names the fix (assistant.answer.service.require_papers). No model."""

from __future__ import annotations

import pytest

from assistant.faces import errors
from assistant.answer.service import EMPTY_INDEX, EmptyIndexError, require_papers


class _Store:
    def __init__(self, papers: int):
        self.papers = papers

    def counts(self) -> tuple[int, int]:
        return self.papers, self.papers * 2


class _Index:
    def __init__(self, papers: int):
        self.store = _Store(papers)


def test_require_papers_raises_a_user_error_that_names_ingest():
    require_papers(_Index(3))  # an index with papers passes
    with pytest.raises(EmptyIndexError) as info:
        require_papers(_Index(0))
    assert isinstance(info.value, errors.user_errors())
    line, code = errors.exit_message(info.value)
    assert code == 2 and "holds no papers" in line and "paper-assistant ingest <files>" in line


def test_mcp_ask_on_an_empty_index_raises_the_fix():
    from assistant.mcp.tools import ask_question

    class _Assistant:
        index = _Index(0)

        def ask(self, *a, **kw):  # never reached: the empty index is caught first
            raise AssertionError("asked an empty index")

    class _Backend:
        def assistant(self):
            return _Assistant()

    with pytest.raises(EmptyIndexError, match="paper-assistant ingest"):
        ask_question(_Backend(), "Which papers study graph coloring?")


def test_page_shows_the_fix_as_one_line():
    import assistant.page as app

    assert app.ui_error(EmptyIndexError(EMPTY_INDEX)) == EMPTY_INDEX  # a user error: shown as it is, not "request failed"


@pytest.mark.parametrize("tool, args", [("search_papers", ("graph coloring",)), ("related_papers", ("graph coloring",)),
                                        ("list_matching", ("graph coloring",))])
def test_every_mcp_tool_that_reads_papers_raises_the_fix_on_an_empty_index(tool, args):
    import assistant.mcp.tools as tools

    class _Assistant:
        index = _Index(0)

        def __getattr__(self, name):  # never reached: the empty index is caught first
            raise AssertionError(f"used {name} on an empty index")

    class _Backend:
        def assistant(self):
            return _Assistant()

    with pytest.raises(EmptyIndexError, match="paper-assistant ingest"):
        getattr(tools, tool)(_Backend(), *args)


class _EmptyStore(_Store):
    """What the page reads at build time from a store without papers."""

    def __init__(self):
        super().__init__(0)

    def all_papers(self):
        return [], []

    def state_stamp(self):
        return 0

    def field_values(self, field):
        return []


def test_page_list_related_and_map_name_the_fix_on_an_empty_index():
    """List mode, the Related tab and the Map tab say what the chat says: no papers, and how to ingest."""
    import assistant.page as app
    from assistant.settings import Settings
    from assistant.text import markup

    class _Assistant:
        llm = None

        def __init__(self):
            self.index = _Index(0)
            self.index.store = _EmptyStore()

        def __getattr__(self, name):  # never reached: the empty index is caught first
            raise AssertionError(f"used {name} on an empty index")

    demo = app.build_app(Settings(), _Assistant())
    fns = {f.api_name: f.fn for f in demo.fns.values() if f.api_name in ("list", "related", "map")}
    shown = f"⚠ {markup.inert(EMPTY_INDEX)}"  # as the chat shows it
    assert "holds no papers" in shown and "paper-assistant ingest" in shown
    listed = fns["list"]("Which papers study graph coloring?", [], [])
    assert listed[1][-1]["content"] == shown
    assert fns["related"]("We color graphs with neural networks.", None, "text") == shown
    assert list(fns["map"]("graph coloring", [], None))[-1][1] == shown  # a generator: progress, then the map
