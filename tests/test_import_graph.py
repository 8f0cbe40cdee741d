"""The core's modules import each other without a circle, in layers, and no private name crosses
a module.

Every import counts, the ones inside functions too (a lazy import only hides a circle until the
day it is imported at the top); only ``if TYPE_CHECKING:`` blocks are left out, since they never
run. A package's ``__init__`` re-exporting its modules' names is its surface, not a dependency of
those modules on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "safetyrepro.adapters"
FOLDER = ROOT / "adapters"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(FOLDER).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path, modules: set[str]) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every import that runs, resolved to the package's modules."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[tuple[str, list[str]]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    target = f"{base}.{child.module}" if child.module else base
                else:
                    target = child.module or ""
                names = [a.name for a in child.names]
                if target in modules:
                    found.append((target, names))
                # `from . import x` / `from .models import hf`: x may itself be a module
                found.extend((f"{target}.{n}", []) for n in names if f"{target}.{n}" in modules)
            elif isinstance(child, ast.Import):
                found.extend((a.name, []) for a in child.names if a.name in modules)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _exports(files: list[Path], modules: set[str]) -> dict[str, dict[str, str]]:
    """Per package: each name its ``__init__`` re-exports, and the module it comes from."""
    found: dict[str, dict[str, str]] = {}
    for path in files:
        if path.name == "__init__.py":
            package = _module_name(path)
            found[package] = {n: target for target, names in _imports(path, modules)
                              if target.startswith(package + ".") for n in names}
    return found


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    files = sorted(FOLDER.rglob("*.py"))
    modules = {_module_name(p) for p in files}
    exports = _exports(files, modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private: list[str] = []
    for path in files:
        source = _module_name(path)
        for target, names in _imports(path, modules):
            if target == source:
                continue
            if path.name == "__init__.py" and target.startswith(source + "."):
                continue  # a package re-exporting its own modules
            if source.startswith(target + "."):
                # A name from a package above: the dependency is on the module that defines it
                # (the package itself is always imported before its modules).
                edges[source].update(exports.get(target, {})[n] for n in names
                                     if n in exports.get(target, {}) and exports[target][n] != source)
                continue
            edges[source].add(target)
            private += [f"{source} imports {target}.{n}" for n in names
                        if n.startswith("_") and not n.startswith("__") and target != PACKAGE]
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


LAYERS = {
    "base": ["errors", "hashing", "hookspecs", "durable", "atomic"],
    # what a measurement is: items, data, templates, cells, extraction, requests, scoring, metrics
    "core": ["items", "phrases", "verdicts", "naming", "reading", "statements", "answers", "extract", "decisions", "prompts", "config", "datafiles", "benchmarks", "benchmarks.base", "benchmarks.bbq",
             "benchmarks.crows_pairs", "benchmarks.toxigen", "benchmarks.truthfulqa", "benchmarks.xstest", "subsets",
             "metrics", "records", "symmetric", "cell", "requests", "scoring", "shapes", "_registry",
             "builtin_plugin"],
    # computing it: models, the plan of requests, the engine, the log, the runner, grids (local, Ray, endpoints)
    "execution": ["models", "models.base", "models.embedded", "models.endpoint", "models.hf", "models.prefix",
                  "journal", "identity", "grid", "gridplan", "gridexec", "gridrun", "gridray", "gridoutput",
                  "gridlayout", "runner", "outfolder", "prereg"],
    # reading a finished run back: verify, results, statistics, gates, cards, the report
    "analysis": ["gridverify", "gridresults", "stats", "inference", "attribution", "analysis", "statsplots",
                 "statsreport", "instrument", "replay", "gates", "card"],
    # designing a study before it runs: sizing and gate simulation from a pilot, the pilot's report
    "design": ["design", "pilot", "pilotreport"],
    "surface": ["cli_common", "cli_grid", "cli_design", "cli", ""],
}
"""Every module's layer: a module imports from its own layer or below, never above."""


def test_layers_are_imported_downward_only() -> None:
    edges, _ = _graph()
    rank = {".".join(filter(None, [PACKAGE, m])): n for n, modules in enumerate(LAYERS.values()) for m in modules}
    assert set(edges) - set(rank) == set(), "a module without a layer: add it to LAYERS"
    upward = [f"{a} ({list(LAYERS)[rank[a]]}) imports {b} ({list(LAYERS)[rank[b]]})"
              for a, targets in edges.items() for b in targets if rank[b] > rank[a]]
    assert upward == []


def test_the_core_has_no_import_circle() -> None:
    edges, _ = _graph()
    assert len(edges) > 30  # the walk found the package
    assert _cycles(edges) == []


def test_no_private_name_is_imported_across_modules() -> None:
    _, private = _graph()
    assert private == []


def test_the_walk_sees_lazy_imports_and_circles() -> None:
    """The checker itself: a lazy import is an edge, and a circle through one is found."""
    edges, _ = _graph()
    assert "safetyrepro.adapters.runner" in edges["safetyrepro.adapters.gridrun"]  # imported inside run_local
    # `from . import get_scorer` in a module is an edge to the module the package takes it from.
    exports = _exports(sorted(FOLDER.rglob("*.py")), set(edges))
    assert exports[PACKAGE]["get_scorer"] == "safetyrepro.adapters._registry"
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _compared_names(path: Path, names: set[str]) -> list[str]:
    """``x == "regex"``, ``x in ("logprob", ...)``: comparisons with a scoring path's name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} matches {node.value.value!r}")
            continue
        table = (node.value if isinstance(node, ast.Subscript) else
                 node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "get" else None)
        if isinstance(table, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in names for k in table.keys):
            # {"regex": ..., "logprob": ...}[scoring] (or .get): a dispatch table on the name
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} looks a scoring name up in a table")
            continue
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        constants = [c for o in operands for c in ([o] if isinstance(o, ast.Constant) else
                                                   getattr(o, "elts", []) if isinstance(o, (ast.Tuple, ast.List, ast.Set))
                                                   else [])]
        hits = [c.value for c in constants if isinstance(c, ast.Constant) and c.value in names]
        if hits:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} compares {hits[0]!r}")
    return found


def test_no_module_outside_the_scorers_compares_a_scoring_name() -> None:
    """Engines and bindings ask a scorer what it does (``requests``, ``read``, ``generates``, its
    shape), never which one it is: a plugin's scorer then runs the same way."""
    from safetyrepro.adapters import all_scorers

    names = set(all_scorers())
    assert {"regex", "logprob", "symmetric"} <= names
    scorers = {FOLDER / "scoring.py"}
    files = [p for folder in ("adapters", "lm_eval_tasks", "inspect_tasks", "helm_specs", "crosspkg")
             for p in sorted((ROOT / folder).rglob("*.py")) if p not in scorers]
    assert [hit for p in files for hit in _compared_names(p, names)] == []
    # The checker itself finds one where there is one (this test's own set comparison above, and
    # the dispatch table and match statement below, which never run).
    hits = _compared_names(ROOT / "tests" / "test_import_graph.py", {"regex"})
    assert [h.split(" ", 1)[1] for h in hits] == ["compares 'regex'", "looks a scoring name up in a table",
                                                  "matches 'regex'"], hits


def _never_called(scoring: str) -> object:  # what the checker must catch (see the test above)
    handler = {"regex": 1}[scoring]
    match scoring:
        case "regex":
            return handler
    return None
