"""Imports flow one way: vectorstore → the answer path's layers → the faces. Walks every import with
``ast`` (function-level ones too: a lazy import hides a cycle, it does not remove it); only
``if TYPE_CHECKING:`` blocks are skipped."""

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS = [
    # 0: records and settings, importing nothing above them
    {"assistant.types", "assistant.settings", "assistant.answer.prompts", "assistant.evaluation.metrics", "assistant.trace",
     "assistant.text.sanitize", "assistant.text.markup", "assistant.research.map_types", "assistant.text.redact"},
    # 1: pure analysis and the chat-model contract
    {"assistant.question.analysis", "assistant.question.answer_types", "assistant.answer.llm", "assistant.answer.citations"},
    # 2: the judge, evidence, retrieval, the list bar
    {"assistant.relevance.judge", "assistant.evidence.sentences", "assistant.retrieval.hybrid", "assistant.relevance.listing", "assistant.answer.prepared",
     "assistant.evidence.cues", "assistant.relevance.learned", "assistant.evidence.ranker",
     "assistant.evidence.features", "assistant.relevance.crossencoder"},
    # 3: follow-ups and generation
    {"assistant.answer.followup", "assistant.answer.generate", "assistant.research.related", "assistant.research.related_list", "assistant.research.related_llm"},
    # 4: the pipeline and the process-wide service
    {"assistant.answer.pipeline", "assistant.answer.service", "assistant.retrieval.langchain_adapter"},
    # 5: the faces
    {"assistant.cli", "assistant.cli.common", "assistant.cli.indexing", "assistant.cli.query", "assistant.cli.chat", "assistant.cli.tools",
     "assistant.cli.serving", "assistant.cli.__main__", "assistant.evaluation.harness", "assistant.learning.evalsets", "assistant.learning.train", "assistant.learning.trainset", "assistant.research.export",
     "assistant.faces.render", "assistant.research.paper_map", "assistant.research.map_labels", "assistant.faces.doctor", "assistant.faces.errors", "assistant.faces.console",
     "assistant.mcp.server", "assistant.mcp.tools",
     "assistant.__main__", "app", "assistant.faces.web_guard",
     "assistant.learning.synthetic", "assistant.learning.crossencoder_pairs", "assistant.learning.crossencoder_fit",
     "assistant.relevance.calibration", "assistant.evaluation.csfcube"},
]


def _modules() -> dict[str, Path]:
    """Module name → file, for every module of the two packages (subpackages too: a package's
    ``__init__.py`` is the package's name; the two top-level ones only set up, and are left out)."""
    paths = [*ROOT.glob("assistant/**/*.py"), *ROOT.glob("vectorstore/**/*.py"), ROOT / "app.py"]
    top = {ROOT / "assistant" / "__init__.py", ROOT / "vectorstore" / "__init__.py"}
    names = {}
    for p in paths:
        if p not in top:
            parts = p.relative_to(ROOT).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return names


def _imports(path: Path, known: set[str]) -> set[str]:
    found = set()

    def visit(node):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in found if m in known}


@lru_cache(maxsize=1)
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(p, set(mods)) - {m} for m, p in mods.items()}


def test_every_module_has_a_layer():
    placed = set().union(*LAYERS)
    assert {m for m in _graph() if m.startswith("assistant") or m == "app"} <= placed


def test_vectorstore_never_imports_the_answer_path_or_the_ui():
    for mod, deps in _graph().items():
        if mod.startswith("vectorstore"):
            assert not {d for d in deps if not d.startswith("vectorstore")}, mod


def test_no_module_imports_a_higher_layer():
    layer = {m: i for i, mods in enumerate(LAYERS) for m in mods}
    upward = [(mod, dep) for mod, deps in _graph().items() for dep in deps
              if mod in layer and dep in layer and layer[dep] > layer[mod]]
    assert upward == []


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    cycles = []

    def walk(node, path):
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep] if dep in path else [node, dep])
            elif dep not in state:
                walk(dep, path + [dep])
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            walk(mod, [mod])
    assert cycles == []


def test_no_module_in_assistant_is_over_350_lines():
    long = {str(p.relative_to(ROOT)): n for p in ROOT.glob("assistant/**/*.py") if (n := len(p.read_text().splitlines())) > 350}
    assert long == {}
