"""The sentence model retrains on a new ATT&CK release: Dagster's own evaluation of its automation condition on
a real (ephemeral) instance, with materializations reported as a run would record them; nothing is trained."""

from __future__ import annotations

import dagster as dg
import pytest

from pipeline.assets.keys import SENTENCE_MODEL_KEY, embeddings_key
from pipeline.definitions import build_definitions
from pipeline.sources.registry import default_registry
from pipeline.training.promotion import SOURCES
from secrag.settings import get_settings

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")


def _requested(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: object) -> tuple[int, object]:
    evaluation = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)  # type: ignore[arg-type]
    return evaluation.get_num_requested(SENTENCE_MODEL_KEY), evaluation.cursor


def test_new_attack_embeddings_request_the_sentence_model_and_other_sources_do_not() -> None:
    defs = build_definitions(get_settings(), default_registry(), [], resources={})
    assert {embeddings_key("mitre_attack"), embeddings_key("mitre_attack_procedures")} <= set(
        defs.resolve_asset_graph().get(SENTENCE_MODEL_KEY).parent_keys
    )
    instance = dg.DagsterInstance.ephemeral()
    for key in [*(embeddings_key(source) for source in SOURCES), embeddings_key("sigma"), SENTENCE_MODEL_KEY]:
        instance.report_runless_asset_event(dg.AssetMaterialization(key))  # everything built once
    _, cursor = _requested(defs, instance, None)
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == 0  # nothing new since its training

    instance.report_runless_asset_event(dg.AssetMaterialization(embeddings_key("sigma")))
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == 0  # another source's embeddings: not its input

    # ATT&CK's new release re-embedded (what the release sensor's run ends with): the model is requested.
    instance.report_runless_asset_event(dg.AssetMaterialization(embeddings_key("mitre_attack")))
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == 1
