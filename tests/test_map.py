"""CONTRIBUTING.md is the contributor's map: every file of the code is on a row of one of its tables, by its path.

A module added without a row fails here, so the map cannot fall behind the tree (it missed five files once).
"""

from __future__ import annotations

import re

from specdec_site.paths import ROOT

# The code the map must name: the library, the build, the scripts, the browser code, the hook, the notebook, the
# tests, CI. Vendored code, caches and data are not code.
CODE = ("specdec/**/*.py", "specdec_site/**/*.py", "scripts/*.py", "scripts/*.sh", "docs/assets/*.js",
        "docs/assets/*.css", "docs/hooks/*.py", "notebooks/*.ipynb", "tests/*.py")


def code_files() -> list[str]:
    found = {path.relative_to(ROOT).as_posix() for pattern in CODE for path in ROOT.glob(pattern)
             if "__pycache__" not in path.parts}
    return sorted(found | {".ci/run"})


def mapped_paths() -> set[str]:
    """The paths named in backticks on a table row of CONTRIBUTING.md."""
    rows = [line for line in (ROOT / "CONTRIBUTING.md").read_text().splitlines() if line.startswith("|")]
    return {name for row in rows for name in re.findall(r"`([^`\s]+)`", row)}


def test_every_file_of_the_code_is_on_a_row_of_the_map():
    mapped = mapped_paths()
    missing = [path for path in code_files() if path not in mapped]
    assert not missing, f"on no row of CONTRIBUTING.md's map (add a row naming its path): {missing}"


def test_the_map_names_no_file_that_is_gone():
    """A row naming a path of the code that no longer exists is a stale map."""
    prefixes = ("specdec/", "specdec_site/", "scripts/", "docs/assets/", "docs/hooks/", "notebooks/", "tests/")
    stale = sorted(p for p in mapped_paths() if p.startswith(prefixes) and "*" not in p and "<" not in p
                   and not p.endswith("/") and not (ROOT / p).exists())
    assert not stale, f"CONTRIBUTING.md names files that are gone: {stale}"


def test_no_python_file_outside_the_tests_is_over_600_lines():
    """A module past 600 lines holds more than one concern (the design tool was 896 lines of five tools): split it
    by concern, as specdec_site/design/ and specdec_site/site/values/ are."""
    long = {path: n for path in code_files() if path.endswith(".py") and not path.startswith("tests/")
            if (n := len((ROOT / path).read_text().splitlines())) > 600}
    assert not long, f"over 600 lines: {long}"


def test_the_site_imports_no_stage_and_no_script_edits_sys_path():
    """Imports run with the data flow: a view (specdec_site/site/) reads an artifact or a shared module, never a
    stage's code; a script or module imports the installed packages, never by editing sys.path."""
    import ast

    for path in sorted((ROOT / "specdec_site" / "site").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith("specdec_site.stages")], f"{path.relative_to(ROOT)} imports a stage"
    for path in code_files():
        if path.endswith(".py") and not path.startswith("tests/"):
            edit = re.search(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*[+]?=", (ROOT / path).read_text())
            assert not edit, f"{path} edits sys.path: {edit.group(0)}"


def _import_graph() -> dict[str, set[str]]:
    """module -> the modules of specdec and specdec_site it imports (anywhere in it, function-level imports too)."""
    import ast

    paths = [*ROOT.glob("specdec/*.py"), *ROOT.glob("specdec_site/**/*.py")]
    modules = {}
    for path in paths:
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                module = ".".join(filter(None, (base, node.module)))
                deps |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names} & set(modules)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names} & set(modules)
        graph[name] = deps - {name}
    return graph


def test_imports_run_with_the_data_flow_and_close_no_circle():
    """models -> decoder (specdec) -> stages -> artifacts -> site: the library imports no build module, no stage
    imports a view nor a view a stage, the engine imports no view, and no chain of imports comes back on itself."""
    graph = _import_graph()
    runs_up = [(a, b) for a, deps in graph.items() for b in deps
               if (a.split(".")[0] == "specdec" and b.startswith("specdec_site"))
               or (a.startswith("specdec_site.stages") and b.startswith("specdec_site.site"))
               or (a.startswith("specdec_site.site") and b.startswith("specdec_site.stages"))
               or (a.startswith("specdec_site.engine") and b.startswith("specdec_site.site"))]
    assert not runs_up, runs_up
    state: dict[str, int] = {}
    circles = []

    def visit(module, stack):
        state[module] = 1
        stack.append(module)
        for dep in graph.get(module, ()):
            if state.get(dep) == 1:
                circles.append(stack[stack.index(dep):] + [dep])
            elif not state.get(dep):
                visit(dep, stack)
        stack.pop()
        state[module] = 2

    for module in graph:
        if not state.get(module):
            visit(module, [])
    assert not circles, circles
