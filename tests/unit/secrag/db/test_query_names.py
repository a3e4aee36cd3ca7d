"""Every named query the code reads exists in the SQL file it reads it from, so a misspelt name fails here
rather than on the request or the run that first reaches it.

Queries are read as attributes (`q.upsert_source`, `self.queries.search_ids`, `Queries(dir, "status").x`).
The file of an access is the literal group of the `Queries(...)` it reads, or the one assigned to its
receiver in the same function or class; else the file its module reads (MODULE_GROUPS)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from secrag.db.queries import load
from secrag.files.package_data import sql_dir

ROOT = Path(__file__).resolve().parents[4]
PACKAGES = ("secrag", "secrag_cli", "serving", "pipeline", "bench")
RECEIVERS = {"q", "queries", "self.q", "self.queries", "service.queries", "store.q"}
# Modules whose Queries arrive as an argument or a field: the file they are given.
MODULE_GROUPS = {
    "secrag/db/migrations.py": "migrations",
    "secrag_cli/sources.py": "status",
    "secrag_cli/tuning_audit.py": "tuning",
    "pipeline/refresh.py": "pipeline",
    "pipeline/sensors.py": "pipeline",
    "pipeline/lookup_read.py": "pipeline",
    "pipeline/pokes.py": "pokes",
    "pipeline/assets/stages.py": "pipeline",
    "pipeline/model_store.py": "store",
    "pipeline/assets/ingested.py": "ingest",
    "pipeline/store/": "store",
    "pipeline/snapshot/": "snapshot",
    "serving/": "serving",
    "bench/": "serving",
}


def _blocks() -> dict[str, set[str]]:
    return {path.stem: set(load(sql_dir(), path.stem)) for path in (sql_dir() / "queries").glob("*.sql")}


def _group_of_call(node: ast.expr) -> str | None:
    """ "g" for `Queries(<dir>, "g")`."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in {"Queries", "queries.Queries"} and len(node.args) == 2:
        group = node.args[1]
        if isinstance(group, ast.Constant) and isinstance(group.value, str):
            return group.value
    return None


def _assigned(scope: ast.AST) -> dict[str, str]:
    """Receiver -> group for `x = Queries(..., "g")` (and `self.x = ...`) anywhere in `scope`."""
    out = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            group = _group_of_call(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets if group else ():
                out[ast.unparse(target)] = group
    return out


def _accesses(tree: ast.Module) -> Iterator[tuple[ast.Attribute | ast.Call, str, str | None]]:
    """(node, query name, group when it is known in the code) for every read of a named query."""
    scopes: list[ast.AST] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Lambda)]
    enclosing: dict[ast.AST, list[ast.AST]] = {}
    for scope in [tree, *scopes]:
        for node in ast.walk(scope):
            enclosing.setdefault(node, []).append(scope)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            receiver = node.value
            name = node.attr
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and len(node.args) >= 2:
            receiver = node.args[0]
            literal = node.args[1]
            name = literal.value if isinstance(literal, ast.Constant) and isinstance(literal.value, str) else "?"
        else:
            continue
        group = _group_of_call(receiver)
        if group is None and ast.unparse(receiver) not in RECEIVERS:
            continue
        for scope in reversed(enclosing.get(node, [])):  # innermost first
            group = group or _assigned(scope).get(ast.unparse(receiver))
        yield node, name, group


def _module_group(relative: str) -> str | None:
    return next((group for prefix, group in MODULE_GROUPS.items() if relative.startswith(prefix)), None)


def test_every_query_read_by_name_exists_in_its_file() -> None:
    blocks = _blocks()
    problems, checked = [], 0
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            for node, name, group in _accesses(ast.parse(path.read_text(encoding="utf-8"))):
                where = f"{relative}:{node.lineno}"
                group = group or _module_group(relative)
                if name == "?":
                    problems.append(
                        f"{where}: a query picked by a computed name cannot be checked; read it as an attribute"
                    )
                elif group is None:
                    problems.append(
                        f"{where}: which SQL file does {name!r} come from? (add the module to MODULE_GROUPS)"
                    )
                elif name not in blocks.get(group, set()):
                    problems.append(f"{where}: no query {name!r} in sql/queries/{group}.sql")
                checked += 1
    assert not problems, "\n".join(problems)
    assert checked > 100  # the scan sees the code's reads (about 140 today)


def test_a_misspelt_name_is_reported() -> None:
    code = 'def f(d):\n    q = Queries(d, "store")\n    return q.upsert_sourse, Queries(d, "serving").data_version\n'
    found = [(name, group) for _, name, group in _accesses(ast.parse(code))]
    assert found == [("upsert_sourse", "store"), ("data_version", "serving")]
    assert "upsert_sourse" not in _blocks()["store"] and "data_version" in _blocks()["serving"]
