"""deploy/: every command that compose.yaml, the Kubernetes manifests, the Helm values and the
Dockerfile run exists among the image's entry points (the console scripts of this environment) and
accepts its arguments (each is run with `--help` appended, which parses them first)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from secrag.settings import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
BIN = Path(sys.executable).parent


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _k8s_documents() -> Iterator[dict[str, Any]]:
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        yield from (d for d in yaml.safe_load_all(path.read_text()) if d)


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    return list(pod.get("containers", []))


def _expand(arg: str) -> str:
    """Compose's `${NAME:-default}` with its default."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", arg)


def _steps(command: list[str]) -> list[list[str]]:
    """The commands of `sh -c "A && exec B"` (the migrate step), in order; any other command as it is."""
    if command[:2] != ["sh", "-c"]:
        return [command]
    steps = [shlex.split(step) for step in command[2].split("&&")]
    return [step[1:] if step[0] == "exec" else step for step in steps]


def _commands() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for name, service in _compose()["services"].items():
        if "build" not in service:
            continue  # PostgreSQL's own image
        if "command" in service:
            command = [_expand(a) for a in service["command"]]
            if command[:2] == ["secrag", "preflight"]:  # secrag preflight ROLE -- COMMAND: both run
                found.append((f"compose {name} preflight", command[:3]))
                command = command[command.index("--") + 1 :]
            found += [(f"compose {name}", step) for step in _steps(command)]
        test = service.get("healthcheck", {}).get("test", [])
        if test[:1] == ["CMD"] and test[1] != "python":
            found.append((f"compose {name} healthcheck", test[1:]))
    for doc in _k8s_documents():
        for container in _containers(doc):
            found += [(f"k8s {doc['metadata']['name']}", step) for step in _steps(container["command"])]
    values = yaml.safe_load((DEPLOY / "helm" / "dagster-values.yaml").read_text())
    for deployment in values["dagster-user-deployments"]["deployments"]:
        found.append((f"helm {deployment['name']}", ["dagster", "code-server", "start", *deployment["codeServerArgs"]]))
    cmd = re.search(r"^CMD (\[.*\])$", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert cmd is not None
    found.append(("Dockerfile CMD", yaml.safe_load(cmd.group(1))))
    return found


COMMANDS = _commands()


def test_every_role_of_the_image_is_deployed() -> None:
    programs = {tuple(c[:3]) for _, c in COMMANDS}
    assert ("secrag", "db", "migrate") in programs
    assert ("dagster", "code-server", "start") in programs
    assert any(p[0] == "dagster-webserver" for p in programs)
    assert ("dagster-daemon", "run", "-w") in programs
    assert any(p[:2] == ("secrag", "serve") for p in programs)


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_each_command_is_an_entry_point_that_takes_its_arguments(where: str, command: list[str]) -> None:
    program = BIN / command[0]
    assert program.is_file(), f"{where}: {command[0]} is not a console script of the image"
    result = subprocess.run(
        [str(program), *command[1:], "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{where}: {' '.join(command)}\n{result.stdout[-1500:]}{result.stderr[-1500:]}"
    assert "Usage:" in result.stdout


def test_compose_wires_the_roles_like_dagsters_docker_deployment() -> None:
    services = _compose()["services"]
    assert set(services) == {"postgres", "migrate", "code-server", "webserver", "daemon", "api", "hooks"}
    for name in ("code-server", "api"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    for name in ("webserver", "daemon"):
        assert services[name]["depends_on"]["code-server"] == {"condition": "service_healthy"}
        assert "/opt/secrag/workspace.yaml" in services[name]["command"]
    # The API logs in as the read-only role and is never given the owner's URL.
    api_env = services["api"]["environment"]
    assert set(api_env) == {"SECRAG_READER_DATABASE_URL"}
    assert api_env["SECRAG_READER_DATABASE_URL"].startswith("postgresql://secrag_reader:")
    assert all("healthcheck" in s for n, s in services.items() if n != "migrate")
    example = (DEPLOY / ".env.example").read_text()
    for variable in set(re.findall(r"\$\{([A-Z_]+):\?", (DEPLOY / "compose.yaml").read_text())):
        assert f"\n{variable}=" in f"\n{example}", f"{variable} is required by compose.yaml but not in .env.example"


def test_the_image_holds_the_files_the_roles_read() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY workspace.yaml /opt/secrag/workspace.yaml" in dockerfile
    assert "deploy/dagster.yaml /opt/secrag/dagster_home/dagster.yaml" in dockerfile
    assert "DAGSTER_HOME=/opt/secrag/dagster_home" in dockerfile
    assert "torch==2.13.0" in dockerfile and "download.pytorch.org/whl/cpu" in dockerfile
    assert re.search(r"^USER secrag$", dockerfile, re.M)
    assert "secrag models export" in dockerfile
    for source in re.findall(r"^COPY (?!--from)(?:--chown=\S+ )?(\S+)", dockerfile, re.M):
        assert (REPO_ROOT / source).exists(), source
    for source in re.findall(r"--mount=type=bind,source=(\S+?),", dockerfile):
        assert (REPO_ROOT / source).is_dir(), source


def test_a_change_to_secrags_code_rebuilds_no_dependency_layer() -> None:
    """The dependencies are installed from the list in pyproject.toml alone (not the file: a tool's
    setting changes nothing), before any of secrag's code is copied, and the runtime stage copies them
    in a layer of their own, before the code."""
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    deps = dockerfile[dockerfile.index("AS requirements") : dockerfile.index("AS models")]
    assert "COPY pyproject.toml /pyproject.toml" in deps and "['project']['dependencies']" in deps
    assert "COPY --from=requirements /requirements.txt" in deps and "pip install -r" in deps
    assert not re.search(r"^COPY (secrag|secrag_cli|pipeline|serving|sql)\b", deps, re.M)
    runtime = dockerfile[dockerfile.index("AS runtime") :]
    copies = re.findall(r"^COPY --from=\w+ (\S+)", runtime, re.M)
    assert copies == ["/opt/secrag/.venv", "/opt/secrag/models", "/opt/secrag/snapshot", "/opt/secrag/app"]
    for arg in ("PYTHON_IMAGE=python:3.11-slim-bookworm", "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"):
        assert f"ARG {arg}" in dockerfile


def test_kubernetes_api_probes_and_secrets() -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _k8s_documents()}
    deployment = docs[("Deployment", "secrag-api")]
    [container] = _containers(deployment)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["envFrom"] == [{"secretRef": {"name": "secrag-reader"}}]
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert ("Service", "secrag-api") in docs and ("HorizontalPodAutoscaler", "secrag-api") in docs
    values = yaml.safe_load((DEPLOY / "helm" / "dagster-values.yaml").read_text())
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["postgresql"]["enabled"] is False
    queue = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert queue["tagConcurrencyLimits"] == instance["concurrency"]["runs"]["tag_concurrency_limits"]


def test_the_dagster_ui_stays_on_loopback_unless_an_operator_opts_in() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    [port] = _compose()["services"]["webserver"]["ports"]
    assert port == "${SECRAG_DAGSTER_UI_BIND:-127.0.0.1}:${DAGSTER_UI_PORT:-3000}:3000"
    assert _expand(port).startswith("127.0.0.1:")
    assert "oauth2-proxy" in text  # the auth proxy to put in front is documented where the port is
    values = yaml.safe_load((DEPLOY / "helm" / "dagster-values.yaml").read_text())
    assert values["dagsterWebserver"]["service"]["type"] == "ClusterIP"
    for variable in ("SECRAG_DAGSTER_UI_BIND", "SECRAG_FORWARDED_ALLOW_IPS"):
        assert f"# {variable}=" in (DEPLOY / ".env.example").read_text()


def test_the_api_takes_its_trusted_proxies_from_one_variable() -> None:
    api = _compose()["services"]["api"]["command"]
    assert api[api.index("--forwarded-allow-ips") + 1] == "${SECRAG_FORWARDED_ALLOW_IPS:-127.0.0.1}"
    [container] = _containers(
        {(d["kind"], d["metadata"]["name"]): d for d in _k8s_documents()}[("Deployment", "secrag-api")]
    )
    command = container["command"]
    assert command[command.index("--forwarded-allow-ips") + 1] == "$(SECRAG_FORWARDED_ALLOW_IPS)"
    assert {"name": "SECRAG_FORWARDED_ALLOW_IPS", "value": "127.0.0.1"} in container["env"]
    # The same variable works where no command line is written (systemd, a shell): `secrag serve` reads it.
    help_text = subprocess.run(
        [str(BIN / "secrag"), "serve", "--help"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "SECRAG_FORWARDED_ALLOW_IPS" in help_text


def test_the_helm_values_keep_the_instance_of_deploy_dagster_yaml() -> None:
    """The Helm chart writes its own instance file: its run queue (one run per source), retries and
    telemetry must say what deploy/dagster.yaml says; only the run count may differ (a pod per run)."""
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    values = yaml.safe_load((DEPLOY / "helm" / "dagster-values.yaml").read_text())
    daemon = values["dagsterDaemon"]
    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert daemon["runCoordinator"]["type"] == instance["run_coordinator"]["class"] == "QueuedRunCoordinator"
    runs = instance["concurrency"]["runs"]
    assert queued["tagConcurrencyLimits"] == runs["tag_concurrency_limits"]
    assert queued["maxConcurrentRuns"] >= runs["max_concurrent_runs"]
    assert daemon["runRetries"] == {
        "enabled": instance["run_retries"]["enabled"],
        "maxRetries": instance["run_retries"]["max_retries"],
    }
    assert values["telemetry"]["enabled"] is instance["telemetry"]["enabled"] is False
    assert values["additionalInstanceConfig"]["nux"] == instance["nux"] == {"enabled": False}


def test_every_dagster_instance_opens_without_the_onboarding_prompt(tmp_path: Path) -> None:
    """The UI opens on the asset graph: the repository root's and the deployments' instance files turn
    Dagster's onboarding (newsletter sign-up) prompt off, and Dagster reads them so."""
    from dagster import DagsterInstance
    from dagster._config import validate_config
    from dagster._core.instance.config import dagster_instance_config_schema

    for path in (REPO_ROOT / "dagster.yaml", DEPLOY / "dagster.yaml"):
        config = yaml.safe_load(path.read_text())
        assert validate_config(dagster_instance_config_schema(), config).success, path
        assert config["nux"] == {"enabled": False}, path
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.nux_enabled is False


def test_the_python_the_dockerfile_and_the_image_check_run_imports() -> None:
    """The `python -c` snippets of the Dockerfile and deploy/check-image.sh name modules of this tree: each
    `from X import Y` they hold must import here (a module moved without them broke the image build once)."""
    found = []
    for name in ("Dockerfile", "check-image.sh"):
        text = (DEPLOY / name).read_text()
        found += [(name, m, n) for m, n in re.findall(r"from ((?:secrag|pipeline|serving)[\w.]*) import (\w+)", text)]
    assert found, "no snippet found: the pattern no longer matches the files"
    for name, module, attr in found:
        imported = __import__(module, fromlist=[attr])
        assert hasattr(imported, attr), f"{name}: {module} has no {attr}"
