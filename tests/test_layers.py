"""The package's layers (docs/architecture.md, "Map of the code"): each module imports only from its own layer and
those below it, lazily or not, and no module imports another in a circle."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "perfmodel"

#: Lowest first. A module belongs to the first entry its dotted name starts with.
LAYERS = [
    ("errors", "version", "parallel", "spreadsheet"),
    ("language",),
    ("data",),
    ("fitting",),
    ("uncertainty",),
    ("search",),
    ("compare", "groups", "group_files", "advise", "plan", "sweep", "wording"),
    ("plots", "report"),
    ("cli", "__main__", ""),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(mod: str) -> int:
    for rank, names in enumerate(LAYERS):
        for name in names:
            if mod == name or (name and mod.startswith(name + ".")):
                return rank
    raise AssertionError(f"perfmodel.{mod} is in no layer: add it to LAYERS and to the map in docs/architecture.md")


def imports(path: Path) -> set[str]:
    """perfmodel modules that ``path`` imports (relative imports resolved; ``from . import x`` names x)."""
    mod = module_name(path)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    if mod == "":
        package = []
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = base + (node.module.split(".") if node.module else [])
            for alias in node.names:
                sub = ".".join(target + [alias.name])
                out.add(
                    sub
                    if (ROOT / Path(*target, alias.name)).exists()
                    or (ROOT / Path(*target, alias.name + ".py")).exists()
                    else ".".join(target)
                )
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for n in names:
                if n == "perfmodel" or n.startswith("perfmodel."):
                    out.add(n[len("perfmodel.") :] if n != "perfmodel" else "")
    return {m for m in out if m != mod}


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
GRAPH = {m: imports(p) for m, p in MODULES.items()}


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_imports_only_from_its_layer_and_below(mod):
    up = sorted(t for t in GRAPH[mod] if layer(t) > layer(mod))
    assert not up, f"perfmodel.{mod} (layer {layer(mod)}) imports higher layers: {up}"


def test_no_import_circle():
    # a package's __init__ re-exports its modules; its modules never import it back
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(GRAPH.get(m, ())):
            if t not in GRAPH:
                continue
            if state.get(t) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(t) :] + [t]))
            if not state.get(t):
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if not state.get(m):
            visit(m)


def test_no_module_over_about_700_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 720}
    assert not long, f"split these modules by subject: {long}"


def test_the_library_never_imports_streamlit():
    for m, p in MODULES.items():
        assert "streamlit" not in {n.split(".")[0] for n in _absolute_imports(p)}, m


def _absolute_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out
