"""A store snapshot baked into the image: the Dockerfile, deploy/build-image.sh, the migrate steps of Compose and
Kubernetes and the docs name one snapshot path, one variable (SECRAG_START_FROM) and one import step, run after
the migrations."""

from __future__ import annotations

import re
from typing import Any

import yaml

from secrag.settings import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
IN_IMAGE = "/opt/secrag/snapshot/store.tar"
IN_TREE = "deploy/snapshot/store.tar"
MIGRATE_STEP = ["sh", "-c", "secrag db migrate && exec secrag snapshot import --once"]


def _read(path: str) -> str:
    return (REPO_ROOT / path).read_text(encoding="utf-8")


def _k8s_migrate_command() -> list[str]:
    [job] = [d for d in yaml.safe_load_all(_read("deploy/k8s/migrate-job.yaml")) if d and d["kind"] == "Job"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    command: list[str] = container["command"]
    return command


def test_the_dockerfile_verifies_the_snapshot_copies_it_and_names_it() -> None:
    dockerfile = _read("deploy/Dockerfile")
    stage = dockerfile[dockerfile.index("AS snapshot") : dockerfile.index("AS runtime")]
    assert "--mount=type=bind,source=deploy/snapshot,target=/snapshot" in stage
    verify = stage.index('secrag snapshot verify "/snapshot/${SNAPSHOT}"')
    copy = stage.index(f'cp "/snapshot/${{SNAPSHOT}}" {IN_IMAGE}')
    assert verify < copy, "the snapshot is copied before it is verified"
    assert re.search(r"if \[ -n \"\$\{SNAPSHOT\}\" \]", stage), "the snapshot is not optional"
    runtime = dockerfile[dockerfile.index("AS runtime") :]
    assert "COPY --from=snapshot /opt/secrag/snapshot /opt/secrag/snapshot" in runtime
    assert re.findall(r"SECRAG_START_FROM=(\S+)", dockerfile) == [f"${{SNAPSHOT:+{IN_IMAGE}}}"]
    assert re.search(r"^ARG SNAPSHOT$", runtime, re.M), "the runtime stage does not see the build argument"
    # Without a snapshot the image holds none: no COPY of the folder into a layer, only the verified file.
    assert not re.search(r"^COPY\s.*deploy/snapshot", dockerfile, re.M)


def test_make_image_passes_the_snapshot_that_is_in_place() -> None:
    script = _read("deploy/build-image.sh")
    assert f"[ ! -e {IN_TREE} ] || args+=(--build-arg SNAPSHOT=store.tar)" in script
    assert "deploy/build-image.sh" in _read("Makefile")
    ignored = _read(".gitignore").splitlines()
    assert "/deploy/snapshot/*" in ignored and "!/deploy/snapshot/README.md" in ignored
    readme = _read("deploy/snapshot/README.md")
    assert "store.tar" in readme and IN_IMAGE in readme and "SECRAG_START_FROM" in readme


def test_compose_and_kubernetes_import_the_snapshot_after_migrating() -> None:
    compose: dict[str, Any] = yaml.safe_load(_read("deploy/compose.yaml"))
    assert compose["services"]["migrate"]["command"] == MIGRATE_STEP
    assert _k8s_migrate_command() == MIGRATE_STEP
    # The Helm chart runs no migrations of its own: the Kubernetes job above goes first.
    helm = _read("deploy/helm/dagster-values.yaml")
    assert "migrate" not in yaml.safe_dump(yaml.safe_load(helm))
    assert helm.index("kubectl apply -f deploy/k8s/migrate-job.yaml") < helm.index("helm upgrade --install")


def test_the_docs_give_the_same_steps() -> None:
    howto = _read("docs/howto/start-from-snapshot.md")
    bake = howto[howto.index("## Bake a snapshot into the image") :]
    bake = bake[: bake.index("\n## ", 1)]
    for fact in (IN_TREE, IN_IMAGE, "make image", "SECRAG_START_FROM", MIGRATE_STEP[2], "secrag snapshot verify"):
        assert fact in bake, f"the how-to's baking section does not say {fact}"
    deployment = _read("docs/deployment.md")
    assert MIGRATE_STEP[2] in deployment and IN_TREE in deployment
