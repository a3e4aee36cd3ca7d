"""deploy/ against published schemas, offline: compose.yaml against the Compose specification's JSON
schema (as shipped in the check-jsonschema wheel), the Kubernetes manifests and the Kubernetes objects
inside the Helm values against the Kubernetes API schemas (as shipped in the kubernetes-validate wheel).

The Helm values are not rendered: no Helm binary comes from PyPI or Debian, and no package ships the
Dagster chart's values.schema.json. What the chart copies into its pods verbatim (env, envFrom,
resources, the run pods' container config, the webserver's service type) is validated instead."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import referencing
import yaml
from kubernetes_validate.utils import schema_contents

from secrag.settings import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
# The oldest Kubernetes release still supported upstream when this was written, and the newest the
# schemas know: a manifest must hold for both.
K8S_VERSIONS = ("1.32.0", kubernetes_validate.latest_version())


@cache
def _compose_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _compose_errors(document: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _compose_validator().iter_errors(document)]


def _load(path: str) -> Any:  # noqa: ANN401
    return yaml.safe_load((DEPLOY / path).read_text())


def test_the_compose_file_follows_the_compose_specification() -> None:
    assert _compose_errors(_load("compose.yaml")) == []


def test_the_compose_schema_catches_a_wrong_file() -> None:
    """The validation is real: a misspelt key and a command of the wrong type are both reported."""
    compose = _load("compose.yaml")
    compose["services"]["api"]["healthchek"] = compose["services"]["api"].pop("healthcheck")
    compose["services"]["migrate"]["command"] = 5
    errors = _compose_errors(compose)
    assert any("healthchek" in e for e in errors), errors
    assert any(e.startswith("services/migrate/command") for e in errors), errors


def _k8s_documents() -> list[dict[str, Any]]:
    return [d for path in sorted((DEPLOY / "k8s").glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_kubernetes_manifests_follow_the_api_schemas(version: str) -> None:
    documents = _k8s_documents()
    assert {d["kind"] for d in documents} >= {"Deployment", "Service", "HorizontalPodAutoscaler", "Job"}
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)  # strict: no unknown field either


def test_the_kubernetes_schemas_catch_a_wrong_manifest() -> None:
    [deployment] = [d for d in _k8s_documents() if d["kind"] == "Deployment" and d["metadata"]["name"] == "secrag-api"]
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[-1], strict=True)


@cache
def _k8s_definitions(version: str) -> referencing.Registry:
    directory = f"kubernetes-json-schema/v{version}-local-strict"
    definitions = referencing.Resource.from_contents(schema_contents(f"{directory}/_definitions.json", version))
    return definitions @ referencing.Registry()


def _k8s_errors(value: Any, definition: str, version: str) -> list[str]:  # noqa: ANN401
    """Errors of value as the Kubernetes API type definition (e.g. io.k8s.api.core.v1.EnvVar)."""
    schema = {"$ref": f"https://kubernetes.io/api/_definitions.json#/$defs/{definition}"}
    validator = jsonschema.Draft202012Validator(schema, registry=_k8s_definitions(version))
    return [f"{definition}: {e.message}" for e in validator.iter_errors(value)]


def _helm_k8s_objects() -> list[tuple[Any, str]]:
    """The parts of the Helm values that the Dagster chart puts into Kubernetes objects as they are."""
    values = _load("helm/dagster-values.yaml")
    found: list[tuple[Any, str]] = []
    for deployment in values["dagster-user-deployments"]["deployments"]:
        found += [(env, "io.k8s.api.core.v1.EnvVar") for env in deployment["env"]]
        found += [({"secretRef": s}, "io.k8s.api.core.v1.EnvFromSource") for s in deployment["envSecrets"]]
        found.append((deployment["resources"], "io.k8s.api.core.v1.ResourceRequirements"))
        port = {"name": "grpc", "containerPort": deployment["port"]}
        pull = deployment["image"]["pullPolicy"]
        found.append(
            ({"name": deployment["name"], "imagePullPolicy": pull, "ports": [port]}, "io.k8s.api.core.v1.Container")
        )
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    container = launcher["runK8sConfig"]["containerConfig"]
    found.append(({"name": "dagster", **container}, "io.k8s.api.core.v1.Container"))
    found += [({"secretRef": s}, "io.k8s.api.core.v1.EnvFromSource") for s in launcher["envSecrets"]]
    found.append((values["dagsterWebserver"]["service"], "io.k8s.api.core.v1.ServiceSpec"))
    return found


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_kubernetes_objects_in_the_helm_values_follow_the_api_schemas(version: str) -> None:
    objects = _helm_k8s_objects()
    assert len(objects) >= 8
    errors = [error for value, definition in objects for error in _k8s_errors(value, definition, version)]
    assert errors == []


def test_the_helm_check_catches_a_wrong_resource() -> None:
    errors = _k8s_errors(
        {"limits": {"memory": "two gigs"}, "request": {}}, "io.k8s.api.core.v1.ResourceRequirements", K8S_VERSIONS[-1]
    )
    assert errors and any("request" in e for e in errors), errors
