"""Imports flow one way, and the folders say which: ``vectorstore`` → ``settings``/``types``/``trace`` → the stage
packages of ``assistant`` in the order :data:`assistant.STAGES` declares (the page, ``assistant.page``, among them)
→ the entry points (``app.py``, ``python -m assistant``). A module's stage is the folder it is saved in; nothing
here lists modules. Every import is walked with ``ast``: function-level ones (a lazy import hides a cycle, it does
not remove it) and ``if TYPE_CHECKING:`` ones too. Modules and functions stay short enough to read whole."""

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = "base"  # the modules directly in assistant/: settings, types, trace (records and settings every stage reads)


def _stages() -> tuple[str, ...]:
    """:data:`assistant.STAGES`, read from the source (importing it would be fine, reading it is plainer)."""
    for node in ast.parse((ROOT / "assistant" / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "STAGES":
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("assistant/__init__.py declares no STAGES")


STAGES = _stages()
ENTRY = {"assistant.__main__", "assistant.cli.__main__", "app"}  # run, never imported (app.py: `python app.py`)


def _modules() -> dict[str, Path]:
    """Module name → file for every module of both packages and app.py (a package's ``__init__.py`` is the
    package's name)."""
    names = {}
    for p in [*ROOT.glob("assistant/**/*.py"), *ROOT.glob("vectorstore/**/*.py"), ROOT / "app.py"]:
        parts = p.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return names


def stage_of(module: str) -> int:
    """The rank of a module's stage: vectorstore −1, base 0, the stages 1…, the entry points last."""
    parts = module.split(".")
    if parts[0] == "vectorstore":
        return -1
    if module in ENTRY:
        return len(STAGES) + 1
    if len(parts) >= 2 and parts[1] in STAGES:
        return STAGES.index(parts[1]) + 1
    return 0


def _store_packages() -> tuple[str, ...]:
    """The sub-packages of ``vectorstore`` (each folder with an ``__init__.py``)."""
    return tuple(sorted(p.parent.name for p in ROOT.glob("vectorstore/*/__init__.py")))


STORE_PACKAGES = _store_packages()


def package_of(module: str) -> str:
    """The package whose face a module is reached through: ``assistant.<stage>`` or ``vectorstore.<sub-package>``
    for their modules, else the module itself."""
    parts = module.split(".")
    if len(parts) >= 2 and ((parts[0] == "assistant" and parts[1] in STAGES)
                            or (parts[0] == "vectorstore" and parts[1] in STORE_PACKAGES)):
        return ".".join(parts[:2])
    return module


def faces() -> list[str]:
    """Every package with a public face: the stages of ``assistant`` and the sub-packages of ``vectorstore``."""
    return [f"assistant.{s}" for s in STAGES] + [f"vectorstore.{s}" for s in STORE_PACKAGES]


def _exports(package_path: Path) -> dict[str, str]:
    """Name → module, from the ``public_face(__name__, {module: names})`` call of a stage's ``__init__``."""
    for node in ast.walk(ast.parse(package_path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "public_face":
            table = ast.literal_eval(node.args[1])
            return {name: module for module, names in table.items() for name in names}
    return {}


@lru_cache(maxsize=1)
def _edges() -> dict[str, set[tuple[str, str]]]:
    """Module → {(imported module, the name as written)}: ``from a.b import c`` gives ``(a.b, c)`` when ``a.b`` is a
    stage package (its face), else ``(a.b.c, "")`` when ``a.b.c`` is a module, else ``(a.b, c)``."""
    mods = _modules()
    edges = {}
    for mod, path in mods.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update((a.name, "") for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom) and node.module in mods:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    face = package_of(node.module) == node.module and node.module.count(".") == 1
                    found.add((sub, "") if sub in mods and not face else (node.module, a.name))
        edges[mod] = {e for e in found if e[0] != mod}
    return edges


def test_every_folder_of_assistant_is_a_declared_stage():
    folders = {p.parent.name for p in ROOT.glob("assistant/*/__init__.py")}
    assert folders == set(STAGES)


def test_assistant_holds_at_most_six_modules_of_its_own():
    assert len(list(ROOT.glob("assistant/*.py"))) <= 6


def test_vectorstore_never_imports_the_answer_path_or_the_ui():
    for mod, deps in _edges().items():
        if mod.startswith("vectorstore"):
            assert not {d for d, _ in deps if not d.startswith("vectorstore")}, mod


def test_no_module_imports_a_later_stage():
    upward = [(mod, dep) for mod, deps in _edges().items() for dep, _ in deps if stage_of(dep) > stage_of(mod)]
    assert upward == []


def test_another_stage_is_imported_only_through_the_names_its_package_exports():
    mods = _modules()
    private = []
    for mod, deps in _edges().items():
        for dep, name in deps:
            pkg = package_of(dep)
            same_stage, bare_package = pkg == package_of(mod), pkg == dep and not name
            if same_stage or bare_package or pkg not in faces() or (mod in ENTRY and dep == "assistant.cli"):
                continue
            exported = _exports(mods[pkg])
            if dep != pkg or name not in exported:
                private.append((mod, dep, name))
    assert private == []


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments): not the ones it imports."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def test_each_exported_name_is_defined_where_its_package_says():
    mods = _modules()
    missing = []
    for pkg in faces():
        for name, module in _exports(mods[pkg]).items():
            path = mods.get(f"{pkg}.{module}")
            if path is None or (name != module and name not in _defined(path)):
                missing.append((pkg, module, name))
    assert missing == []


def test_no_import_cycle():
    """Over modules, a package's face counting as importing the modules it exports from."""
    mods = _modules()
    graph = {mod: {d for d, _ in deps} for mod, deps in _edges().items()}
    for pkg in faces():
        graph[pkg] |= {f"{pkg}.{m}" for m in set(_exports(mods[pkg]).values())}
    state: dict[str, int] = {}
    cycles = []

    def walk(node, path):
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                walk(dep, path + [dep])
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            walk(mod, [mod])
    assert cycles == []


def test_no_module_in_assistant_or_vectorstore_is_over_350_lines():
    long = {str(p.relative_to(ROOT)): n for p in [*ROOT.glob("assistant/**/*.py"), *ROOT.glob("vectorstore/**/*.py")]
            if (n := len(p.read_text().splitlines())) > 350}
    assert long == {}


def test_vectorstore_is_grouped_by_concern_each_group_with_a_public_face():
    """At most 6 modules directly in ``vectorstore/``, at least 4 sub-packages, and each sub-package's
    ``__init__`` says what it holds (a docstring) and exports its names; no exported name is also the name
    of one of its modules (importing the module would replace the name on the package)."""
    mods = _modules()
    assert len(list(ROOT.glob("vectorstore/*.py"))) <= 6
    assert len(STORE_PACKAGES) >= 4
    for sub in STORE_PACKAGES:
        init = ROOT / "vectorstore" / sub / "__init__.py"
        exports = _exports(init)
        assert ast.get_docstring(ast.parse(init.read_text())), sub
        assert exports, sub
        assert not {n for n, m in exports.items() if n != m and f"vectorstore.{sub}.{n}" in mods}, sub


def test_no_module_name_marks_half_of_a_split():
    private = [str(p.relative_to(ROOT)) for p in [*ROOT.glob("assistant/**/*.py"), *ROOT.glob("vectorstore/**/*.py")]
               if p.name.startswith("_") and p.name not in ("__init__.py", "__main__.py")]
    assert private == []


def test_app_py_only_starts_the_page():
    """The page lives in ``assistant.page``; ``app.py`` is the entry a user runs, a few lines over it."""
    assert len((ROOT / "app.py").read_text().splitlines()) <= 80


def test_no_function_in_assistant_vectorstore_or_app_py_is_over_80_lines():
    """From ``def`` to its last line, docstring and nested functions included."""
    long = {}
    for p in [*ROOT.glob("assistant/**/*.py"), *ROOT.glob("vectorstore/**/*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long[f"{p.relative_to(ROOT)}:{node.lineno} {node.name}"] = node.end_lineno - node.lineno + 1
    assert long == {}


def test_every_import_of_the_project_names_a_module_that_exists():
    """A lazy import of a module that moved (``from vectorstore.lease import …``) fails only when its line runs:
    every import of ``assistant``, ``vectorstore`` or ``app`` must name a module or package of the project."""
    mods = _modules()
    missing = []
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            missing += [(mod, n) for n in names if n.split(".")[0] in ("assistant", "vectorstore") and n not in mods]
    assert missing == []
