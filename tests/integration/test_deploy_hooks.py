"""The webhook receiver in deploy/: compose's `hooks` service (a profile, off by default) and the Kubernetes
Deployment and Service agree on the command, port and login, and neither is given the owner's URL."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from secrag.settings import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
PORT = 8010


def _k8s() -> dict[tuple[str, str], dict[str, Any]]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "hooks.yaml").read_text())
    return {(d["kind"], d["metadata"]["name"]): d for d in docs if d}


def test_compose_and_kubernetes_run_the_same_receiver() -> None:
    service = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["hooks"]
    assert service["profiles"] == ["hooks"]  # off unless asked for
    docs = _k8s()
    [container] = docs[("Deployment", "secrag-hooks")]["spec"]["template"]["spec"]["containers"]
    assert service["command"][:7] == container["command"][:7] == [
        "secrag", "hooks", "--host", "0.0.0.0", "--port", str(PORT), "--forwarded-allow-ips"
    ]  # fmt: skip
    assert service["ports"] == [f"${{SECRAG_HOOKS_PORT:-{PORT}}}:{PORT}"]
    assert container["ports"] == [{"name": "http", "containerPort": PORT}]
    [port] = docs[("Service", "secrag-hooks")]["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (PORT, "http")
    # Enabled where it is deployed, logged in as secrag_hooks, never as the owner.
    assert service["environment"]["SECRAG_HOOKS_ENABLED"] == "true"
    assert service["environment"]["SECRAG_HOOKS_DATABASE_URL"].startswith("postgresql://secrag_hooks:")
    assert set(service["environment"]) == {"SECRAG_HOOKS_ENABLED", "SECRAG_HOOKS_DATABASE_URL"}
    assert {"name": "SECRAG_HOOKS_ENABLED", "value": "true"} in container["env"]
    assert container["envFrom"] == [{"secretRef": {"name": "secrag-hooks"}}]
    assert "/healthz" in service["healthcheck"]["test"][-1]
    assert container["readinessProbe"]["httpGet"]["path"] == container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_compose_database_gives_the_hooks_role_its_password_only_when_set() -> None:
    init = (DEPLOY / "postgres-init.sh").read_text()
    assert 'hooks_password="$SECRAG_HOOKS_PASSWORD"' in init
    roles = (REPO_ROOT / "sql" / "roles.sql").read_text()
    assert "\\if :{?hooks_password}" in roles and "ALTER ROLE secrag_hooks LOGIN PASSWORD :'hooks_password'" in roles
    result = subprocess.run(["sh", "-n", str(DEPLOY / "postgres-init.sh")], capture_output=True, check=False)
    assert result.returncode == 0, result.stderr
