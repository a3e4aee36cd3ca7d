"""`secrag hooks` refuses to start on a secrets map it cannot use, saying why, before it opens anything."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from secrag.settings import get_settings
from secrag_cli.main import cli


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SECRAG_HOOKS_ENABLED", "true")
    monkeypatch.delenv("SECRAG_HOOK_SECRETS_FILE", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("secrets", "said"),
    [('{"SigmaHQ/sigma/rules": "s"}', "names no webhook"), ("{}", "no webhook has a secret")],
)
def test_hooks_refuses_secrets_it_cannot_use(monkeypatch: pytest.MonkeyPatch, secrets: str, said: str) -> None:
    monkeypatch.setenv("SECRAG_HOOK_SECRETS", secrets)
    result = CliRunner().invoke(cli, ["hooks", "--port", "8010"])
    assert result.exit_code == 2, result.output
    assert said in result.output
