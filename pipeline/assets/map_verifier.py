"""`models/map_verifier`: the map's verifier and behaviour gate (pipeline/training/verifier.py), trained beside the
promoted sentence model after each training of it, with their gate as an asset check: a verifier whose first
candidate is not right more often than the vote's on the held-back actors' examples is not kept."""

from collections.abc import Iterator

import dagster as dg

from pipeline.training.verifier import GATE_FIGURE, MIN_GAIN, train_promoted_verifier
from secrag.models.encoders import document_encoder
from secrag.settings import get_settings

from ..automation import on_new_inputs
from ..resources import EmbedderResource, StoreResource
from .embeddings import EMBEDDING_POOL
from .keys import MAP_VERIFIER_KEY, OWNERS, SENTENCE_MODEL_KEY, VERIFIER_QUALITY
from .sentence_model import TRAINING_PRIORITY

# Part of the asset's code version: a change of the verifier's features or fit retrains it.
VERIFIER_VERSION = "1"


def build_map_verifier_asset() -> dg.AssetsDefinition:
    """The verifier of the promoted sentence model, trained after it."""

    @dg.asset(
        key=MAP_VERIFIER_KEY,
        deps=[SENTENCE_MODEL_KEY],
        group_name="models",
        code_version=VERIFIER_VERSION,
        automation_condition=on_new_inputs(),
        owners=OWNERS,
        kinds={"scikitlearn", "json"},
        pool=EMBEDDING_POOL,
        op_tags={"dagster/priority": str(TRAINING_PRIORITY)},
        check_specs=[
            dg.AssetCheckSpec(
                VERIFIER_QUALITY,
                asset=MAP_VERIFIER_KEY,
                description=f"On the held-back actors' procedure examples, the verifier's {GATE_FIGURE} beats the "
                f"vote's by at least {MIN_GAIN} (else it is not kept and the selector serves the map).",
            )
        ],
        description="A logistic model over each candidate technique's evidence in the sentence model's vectors, "
        "trained on ATT&CK's procedure examples (their own actor left out of the vote), and a behaviour gate "
        "trained on them against the store's text about no procedure; kept as verifier.json in the promoted "
        "model's folder, so it is promoted, rolled back and carried by a snapshot with it.",
    )
    def map_verifier(
        context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        models_dir = get_settings().models_dir

        def encoders(model_id: str):  # noqa: ANN202 - a TextModel
            return document_encoder(
                model_id, batch_size=embedder.batch_size, threads=embedder.threads, cache_dir=models_dir
            )

        with store.connect() as conn:
            outcome = train_promoted_verifier(conn, store.sql_path(), models_dir, encoders, progress=context.log.info)
        figures = dict(outcome.figures) if outcome is not None else {}
        yield dg.AssetCheckResult(
            check_name=VERIFIER_QUALITY,
            passed=outcome is not None and outcome.passed,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"model": outcome.model if outcome is not None else "", **figures},
        )
        yield dg.MaterializeResult(
            metadata={
                "model": outcome.model if outcome is not None else "",
                "kept": outcome is not None and outcome.passed,
                "file": str(outcome.written) if outcome is not None and outcome.written else "",
                **figures,
            }
        )

    return map_verifier
