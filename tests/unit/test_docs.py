"""The docs (README.md and docs/*.md) name only what exists: relative links and their anchors, `secrag`
commands, `make` targets and SECRAG_* variables. Each test lists every offender at once."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import click
from pydantic import AliasChoices
from pydantic.fields import FieldInfo

from secrag.settings import REPO_ROOT, SETTINGS_GROUPS, Settings
from secrag_cli.main import cli
from serving.settings import SERVING_GROUPS, ServingSettings

DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
_SECRAG_COMMAND = re.compile(r"(?<![\w/.-])secrag ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")
_MAKE_TARGET = re.compile(r"(?<![\w/.-])make ([a-z][\w-]*)")
_VARIABLE = re.compile(r"\bSECRAG_[A-Z0-9][A-Z0-9_]*")
_TARGET_LINE = re.compile(r"^([\w.-]+):(?!=)", re.MULTILINE)
# Variables read outside the settings models: os.environ / getenv, click options' envvar=, and module
# constants naming one (preflight's INSTANCE_URL).
_READ_IN_CODE = re.compile(
    r"""(?:environ(?:\.get)?\s*[\[(]\s*|getenv\(\s*|envvar\s*=\s*|^[A-Z_]+\s*=\s*)["'](SECRAG_[A-Z0-9_]+)["']""",
    re.MULTILINE,
)
_DAGSTER_ENV = re.compile(r"\benv:\s*(SECRAG_[A-Z0-9_]+)")
_SHELL_COMMENT = re.compile(r"\s#.*$", re.MULTILINE)
_ASSIGNED = re.compile(r"^\s*#?\s*(SECRAG_[A-Z0-9_]+)=", re.MULTILINE)


def _text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


def _code(text: str) -> Iterator[str]:
    """Fenced blocks without their shell comments, then the inline code spans of the prose around them. JSON
    blocks are answers, not commands (a layer named "secrag coverage of G0007", a budget-shortened "secrag cover…")."""
    blocks = (match.group(0) for match in _FENCE.finditer(text) if not match.group(0).startswith("```json"))
    yield from (_SHELL_COMMENT.sub("", block) for block in blocks)
    yield from (match.group(1) for match in _SPAN.finditer(_FENCE.sub("", text)))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as hyphens."""
    plain = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {_slug(heading) for heading in _HEADING.findall(_FENCE.sub("", _text(doc)))}


def _where(doc: Path) -> str:
    return str(doc.relative_to(REPO_ROOT))


def test_every_relative_link_resolves() -> None:
    broken = []
    for doc in DOCS:
        for target in _LINK.findall(_FENCE.sub("", _text(doc))):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve() if path else doc
            if not resolved.exists():
                broken.append(f"{_where(doc)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{_where(doc)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def _commands(group: click.Group) -> dict[str, click.Command]:
    return dict(group.commands)


def test_every_secrag_command_exists() -> None:
    top = _commands(cli)
    unknown = []
    for doc in DOCS:
        for code in _code(_text(doc)):
            for name, sub in _SECRAG_COMMAND.findall(code):
                command = top.get(name)
                if command is None:
                    unknown.append(f"{_where(doc)}: secrag {name}")
                elif sub and isinstance(command, click.Group) and sub not in command.commands:
                    unknown.append(f"{_where(doc)}: secrag {name} {sub}")
    assert not unknown, "\n".join(sorted(set(unknown)))


def test_every_make_target_exists() -> None:
    targets = set(_TARGET_LINE.findall((REPO_ROOT / "Makefile").read_text(encoding="utf-8")))
    unknown = {
        f"{_where(doc)}: make {target}"
        for doc in DOCS
        for code in _code(_text(doc))
        for target in _MAKE_TARGET.findall(code)
        if target not in targets
    }
    assert not unknown, "\n".join(sorted(unknown))


def _setting_names() -> set[str]:
    names = set()
    for model in (Settings, ServingSettings):
        for field, info in model.model_fields.items():
            names.add(f"SECRAG_{field.upper()}")
            alias = info.validation_alias
            if isinstance(alias, AliasChoices):
                names.update(choice for choice in alias.choices if isinstance(choice, str))
            elif isinstance(alias, str):
                names.add(alias)
    return names


def _read_elsewhere() -> set[str]:
    """SECRAG_* variables the code reads directly, and the deployment files' own (passwords, image, ports)."""
    code = [
        path
        for top in ("secrag", "secrag_cli", "pipeline", "serving", "bench", "tests")
        for path in (REPO_ROOT / top).rglob("*.py")
    ]
    names = {name for path in code for name in _READ_IN_CODE.findall(path.read_text(encoding="utf-8"))}
    deploy = REPO_ROOT / "deploy"
    for example in {*deploy.glob("*.env.example"), deploy / ".env.example"}:
        names.update(_ASSIGNED.findall(example.read_text(encoding="utf-8")))
    for dagster_yaml in (deploy / "dagster.yaml", REPO_ROOT / "workspace.yaml"):
        names.update(_DAGSTER_ENV.findall(dagster_yaml.read_text(encoding="utf-8")))
    for script in deploy.glob("*.sh"):  # the image's build and check scripts (SECRAG_IMAGE, SECRAG_BUILD_CA)
        names.update(re.findall(r"\$\{?(SECRAG_[A-Z0-9_]+)", script.read_text(encoding="utf-8")))
    return names


def test_every_secrag_variable_exists() -> None:
    known = _setting_names() | _read_elsewhere()
    unknown = {f"{_where(doc)}: {name}" for doc in DOCS for name in _VARIABLE.findall(_text(doc)) if name not in known}
    assert not unknown, "\n".join(sorted(unknown))


def test_the_readme_states_the_two_commands() -> None:
    readme = _text(REPO_ROOT / "README.md")
    assert "make run" in readme and "make test" in readme
    assert len(readme.encode("utf-8")) <= 10_500


# A measured figure: a number with a unit of time, size or rate, or a three-decimal score (nDCG@10, P@1).
# Settings' defaults in seconds ("30 s") are configuration, not measurements, and are left out.
_FIGURE = re.compile(
    r"(?<![\w.,/-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)? ?(?:ms|chunks/s|req/s|GB|MB|KB|KiB|MiB|GiB|minutes|h)\b"
    r"|(?<![\w.])[01]\.\d{3}\b"
)
# What a settings description may not say at all: a figure, a time it takes ("about 5 s") or a ratio ("2x").
_MEASURED = re.compile(rf"{_FIGURE.pattern}|\babout \d[\d,.]* ?(?:s|seconds)\b|(?<![\w.])\d+(?:\.\d+)?x\b")
# Generated reference states defaults, and the changelog history: neither is a figure's home.
_NOT_FIGURE_PAGES = {"docs/configuration.md", "docs/reference/api.md", "CHANGELOG.md"}
# The settings' descriptions, which docs/configuration.md copies in: one more page, under this name.
SETTINGS_PAGE = "the settings' descriptions (secrag/settings.py, serving/settings/)"
_NAMED_PAGE = re.compile(r"\bdocs/[\w/-]+\.md\b")


# On a line that states another measure which happens to have the same value as a figure elsewhere.
DISTINCT = "<!-- distinct figure -->"


def _settings() -> Iterator[tuple[str, FieldInfo]]:
    """(Group.field, field) of every setting, each in the group that declares it."""
    for group in (*SETTINGS_GROUPS, *SERVING_GROUPS):
        for name, field in group.model_fields.items():
            if name in group.__annotations__:
                yield f"{group.__name__}.{name}", field


def _settings_lines() -> list[str]:
    return [f"{name}: {' '.join((field.description or '').split())}" for name, field in _settings()]


def _page_lines() -> dict[str, list[str]]:
    """Each page's prose and table lines (code blocks left out), the settings' descriptions as one page."""
    pages = {_where(doc): _FENCE.sub("", _text(doc)).splitlines() for doc in DOCS if doc.exists()}
    return {**pages, SETTINGS_PAGE: _settings_lines()}


def _figure_lines(lines: list[str]) -> Iterator[tuple[str, str]]:
    """(figure, line) for each figure in lines (code spans left out)."""
    for line in lines:
        if DISTINCT in line:
            continue
        for figure in _FIGURE.findall(_SPAN.sub("", line)):
            yield figure, line


def _links_to(line: str, page: str) -> set[str]:
    """The pages a line links to; a settings description names one as docs/NAME.md."""
    if page == SETTINGS_PAGE:
        return set(_NAMED_PAGE.findall(line))
    found = set()
    for target in _LINK.findall(line):
        path = target.partition("#")[0]
        if path and not re.match(r"[a-z]+:", path):
            found.add(_where(((REPO_ROOT / page).parent / path).resolve()))
    return found


def test_every_figure_has_one_home() -> None:
    """A figure stands on one page, its home; another page may quote it only on a line that links to that
    home. Two pages stating the same figure unlinked is the drift this catches; the settings' descriptions are
    a page too. A line stating another measure which shares a figure's value says so with DISTINCT."""
    where: dict[str, dict[str, list[str]]] = {}
    for page, lines in _page_lines().items():
        if page not in _NOT_FIGURE_PAGES:
            for figure, line in _figure_lines(lines):
                where.setdefault(figure, {}).setdefault(page, []).append(line)
    twice = []
    for figure, by_page in sorted(where.items()):
        if len(by_page) < 2:
            continue
        homes = {
            page
            for page, lines in by_page.items()
            if not all(_links_to(line, page) & (set(by_page) - {page}) for line in lines)
        }
        if len(homes) > 1:
            twice.append(f"{figure}: {', '.join(sorted(homes))}")
    assert not twice, "figures stated on more than one page (keep one home, link to it from the others):\n" + (
        "\n".join(twice)
    )


def test_settings_descriptions_state_no_measured_figure() -> None:
    """A setting says what it does; how fast or large that turned out is docs/figures.md's (with its command)."""
    measured = [
        f"{line[: line.index(':')]}: {m.group(0)}" for line in _settings_lines() for m in _MEASURED.finditer(line)
    ]
    assert not measured, "figures in settings' descriptions (move them to docs/figures.md):\n" + "\n".join(measured)


def _default_forms(value: object) -> set[str]:
    """How prose writes a numeric default: 131072, 131,072, and a byte count as 8 MiB or 8 MB. 0 and 1 are left
    out: prose says what they mean ("0: off"), which is not stating the default."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value in (0, 1):
        return set()
    number = int(value) if float(value).is_integer() else value
    forms = {str(number), f"{number:,}"}
    for unit, size in (("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("KB", 1000), ("MB", 1000**2)):
        if isinstance(number, int) and number >= size and number % size == 0:
            forms.add(f"{number // size} {unit}")
    return forms


def _defaults() -> dict[str, set[str]]:
    """SECRAG_* variable -> the forms of its numeric default."""
    found = {}
    for name, field in _settings():
        alias = field.validation_alias
        names = alias.choices if isinstance(alias, AliasChoices) else [f"SECRAG_{name.split('.')[1].upper()}"]
        for variable in names:
            found[str(variable)] = _default_forms(field.default)
    return {variable: forms for variable, forms in found.items() if forms}


def stated_defaults(line: str, defaults: dict[str, set[str]]) -> list[str]:
    """The variables whose default the line states beside them: in the 40 characters either side of the name,
    not reaching another variable."""
    stated = []
    for match in _VARIABLE.finditer(line):
        forms = defaults.get(match.group(0), set())
        before = line[max(0, match.start() - 40) : match.start()].rsplit("SECRAG_", 1)[-1]
        after = line[match.end() : match.end() + 40].split("SECRAG_", 1)[0]
        if any(re.search(rf"(?<![\w.,]){re.escape(form)}(?![\w,]|\.\d)", f"{before} {after}") for form in forms):
            stated.append(match.group(0))
    return stated


def test_no_page_restates_a_default() -> None:
    """A setting's default lives in the models (docs/configuration.md, generated); any other page, the
    generated API reference and the settings' own descriptions included, names the variable and links there."""
    defaults = _defaults()
    stated = [
        f"{page}: {variable} ({' / '.join(sorted(defaults[variable]))})"
        for page, lines in _page_lines().items()
        if page not in {"docs/configuration.md", "CHANGELOG.md"}
        for line in lines
        for variable in stated_defaults(line, defaults)
    ]
    assert not stated, "defaults stated outside the settings reference:\n" + "\n".join(sorted(set(stated)))


def test_a_stated_default_is_found() -> None:
    defaults = {"SECRAG_MAP_TIMEOUT_SECONDS": {"30"}, "SECRAG_MAP_MAX_CHARS": _default_forms(131072)}
    assert stated_defaults("a deadline, `SECRAG_MAP_TIMEOUT_SECONDS` (30 s), then", defaults)
    assert stated_defaults("texts over SECRAG_MAP_MAX_CHARS (131,072 characters) are refused", defaults)
    assert stated_defaults("128 KiB (`SECRAG_MAP_MAX_CHARS`)", defaults)
    assert not stated_defaults("`SECRAG_MAP_TIMEOUT_SECONDS` bounds a map; 300 sentences", defaults)
    assert not stated_defaults("SECRAG_MAP_TIMEOUT_SECONDS; SECRAG_OTHER (30 s)", defaults)


def test_every_diagram_is_rendered() -> None:
    """Each Graphviz source under docs/images has its SVG beside it, holding every node's first label line
    (a node added to the source and not rendered fails)."""
    stale = []
    for source in sorted((REPO_ROOT / "docs" / "images").glob("*.dot")):
        svg = source.with_suffix(".svg")
        rendered = svg.read_text(encoding="utf-8") if svg.exists() else ""
        for label in re.findall(r'\blabel="([^"\\]+)', source.read_text(encoding="utf-8")):
            if label.strip() and html.escape(label.strip()).replace("-", "&#45;") not in rendered:
                stale.append(f"{_where(svg)}: {label.strip()}")
    assert not stale, "render with `dot -Tsvg SOURCE -o SVG`:\n" + "\n".join(stale)


def test_the_command_line_page_lists_every_command() -> None:
    """docs/reference/cli.md names every `secrag` command and subcommand."""
    page = _text(REPO_ROOT / "docs" / "reference" / "cli.md")
    found = _SECRAG_COMMAND.findall(page)
    named = {f"{name} {sub}" for name, sub in found} | {name for name, _ in found}
    missing = []
    for name, command in _commands(cli).items():
        subs = sorted(command.commands) if isinstance(command, click.Group) else []
        missing += [f"secrag {name} {sub}" for sub in subs if f"{name} {sub}" not in named]
        if not subs and name not in named:
            missing.append(f"secrag {name}")
    assert not missing, "run `secrag commands --write`:\n" + "\n".join(missing)
