"""The settings are documented from their models: every field in one group, described, and the tables of
docs/configuration.md equal to what the models generate."""

from __future__ import annotations

from click.testing import CliRunner
from pydantic import BaseModel

from secrag.settings import REPO_ROOT, SETTINGS_GROUPS, Settings
from secrag_cli.main import cli
from secrag_cli.settings_docs import DOCS_FILE, settings_tables
from serving.settings import SERVING_GROUPS, ServingSettings

GROUPS = (*SETTINGS_GROUPS, *SERVING_GROUPS)


def _declared(group: type[BaseModel]) -> set[str]:
    return {name for name in group.model_fields if name in group.__annotations__}


def test_every_setting_belongs_to_exactly_one_group() -> None:
    seen: list[str] = [name for group in GROUPS for name in _declared(group)]
    assert len(seen) == len(set(seen))
    assert set(seen) == set(ServingSettings.model_fields)
    assert {n for g in SETTINGS_GROUPS for n in _declared(g)} == set(Settings.model_fields)


def test_every_setting_says_what_it_means_and_a_computed_default_says_how() -> None:
    for group in GROUPS:
        assert group.__doc__, group
        for name in _declared(group):
            field = group.model_fields[name]
            assert field.description, f"{group.__name__}.{name} has no description"
            if field.default_factory is not None:
                extra = field.json_schema_extra
                assert isinstance(extra, dict) and "doc_default" in extra, f"{group.__name__}.{name}"


def test_the_configuration_docs_hold_the_generated_tables() -> None:
    result = CliRunner().invoke(cli, ["settings", "docs", "--check", "--file", str(REPO_ROOT / DOCS_FILE)])
    assert result.exit_code == 0, result.output
    for name in ServingSettings.model_fields:
        assert f"SECRAG_{name.upper()}" in settings_tables(cli) or name in ("database_url", "github_token")
