"""The environment variables read outside the settings models, for the settings reference: the command
line's options (click's `envvar=`, found by walking the commands), the ones Dagster reads from its YAML,
and the deployment files' own (deploy/compose.yaml, its init script, the image build, `make test`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Variable:
    """One variable: its default as the reference states it, what it means, and what reads it."""

    name: str
    default: str
    meaning: str
    read_by: str


# Read by Dagster's own processes from workspace.yaml and deploy/dagster.yaml: `secrag run` sets all three
# for the processes it starts (secrag_cli/dagster_launcher.py), the image and compose.yaml set them per role.
DAGSTER: tuple[Variable, ...] = (
    Variable(
        "SECRAG_DAGSTER_PG_URL",
        "set by `secrag run`: the `secrag_dagster` database beside the store",
        "The Dagster instance's storage (runs, event log, schedules); every Dagster role needs it and "
        "`secrag preflight` checks that it answers.",
        "deploy/dagster.yaml",
    ),
    Variable(
        "SECRAG_CODE_SERVER_HOST",
        "set by `secrag run`: `127.0.0.1`; the image: `code-server`",
        "Where the webserver and the daemon reach the code server.",
        "workspace.yaml",
    ),
    Variable(
        "SECRAG_CODE_SERVER_PORT",
        "set by `secrag run` and the image: `4266`",
        "The code server's port.",
        "workspace.yaml",
    ),
)

# Read by the deployment files themselves, never by secrag's code.
DEPLOYMENT: tuple[Variable, ...] = (
    Variable(
        "SECRAG_READER_PASSWORD",
        "none: compose refuses to start without it",
        "The password of the API's role `secrag_reader`, set when the database is first created.",
        "deploy/compose.yaml, deploy/postgres-init.sh",
    ),
    Variable(
        "SECRAG_QUERYLOG_PASSWORD",
        "none: compose refuses to start without it",
        "The password of the query log's role `secrag_querylog`, set when the database is first created.",
        "deploy/compose.yaml, deploy/postgres-init.sh",
    ),
    Variable(
        "SECRAG_HOOKS_PASSWORD",
        "unset: the `hooks` profile's role has no password",
        "The password of the webhook receiver's role `secrag_hooks`, set when the database is first created.",
        "deploy/compose.yaml, deploy/postgres-init.sh",
    ),
    Variable(
        "SECRAG_HOOKS_PORT", "`8010`", "The host port the webhook receiver is published on.", "deploy/compose.yaml"
    ),
    Variable("SECRAG_API_PORT", "`8000`", "The host port the API container is published on.", "deploy/compose.yaml"),
    Variable("SECRAG_API_WORKERS", "`2`", "Worker processes of the API container.", "deploy/compose.yaml"),
    Variable(
        "SECRAG_DAGSTER_UI_BIND",
        "`127.0.0.1`",
        "The host address the Dagster UI is published on (it has no login: keep it behind an auth proxy).",
        "deploy/compose.yaml",
    ),
    Variable(
        "SECRAG_IMAGE",
        "`secrag:latest`",
        "The image compose runs and `make image` builds.",
        "deploy/compose.yaml, deploy/build-image.sh",
    ),
    Variable(
        "SECRAG_BUILD_CA",
        "unset",
        "A CA bundle pip trusts during the image build (podman/buildah), for networks that re-sign TLS.",
        "deploy/build-image.sh",
    ),
    Variable(
        "SECRAG_TEST_CHROMIUM",
        "`chromium` on the PATH",
        "The Chromium binary of the browser tests.",
        "`make test`",
    ),
)


def _options(command: click.Command, path: str) -> Iterator[tuple[str, click.Option]]:
    for param in command.params:
        if isinstance(param, click.Option) and param.envvar:
            yield path, param
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _options(sub, f"{path} {name}")


def command_line(root: click.Command, prog: str = "secrag") -> tuple[Variable, ...]:
    """The variables the command line's options read, each with the option's default and help."""
    found: dict[str, Variable] = {}
    for path, option in _options(root, prog):
        names = [option.envvar] if isinstance(option.envvar, str) else list(option.envvar or ())
        default = "unset" if option.default is None else f"`{option.default}`"
        for name in names:
            read_by = f"`{path} {option.opts[0]}`"
            if name in found:  # one variable, several options: one row naming them all
                first = found[name]
                found[name] = Variable(name, first.default, first.meaning, f"{first.read_by}, {read_by}")
            else:
                found[name] = Variable(name, default, option.help or "", read_by)
    return tuple(found[name] for name in sorted(found))
