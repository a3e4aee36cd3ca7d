"""`models/sentence_model`: the encoder of the sentence path, trained on ATT&CK's procedure examples whenever they
change (pipeline/training), with its quality gate as an asset check: a model that does not beat the one serving
the sentence path on the held-back actors' examples is recorded but never promoted."""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from pipeline.training.fine_tune import Recipe
from pipeline.training.promotion import SOURCES
from pipeline.training.trainer import GATE_FIGURE, MIN_GAIN, TrainingConfig, train_sentence_model
from secrag.models.encoders import document_encoder
from secrag.settings import get_settings

from ..automation import on_new_inputs
from ..resources import EmbedderResource, StoreResource
from .embeddings import EMBEDDING_POOL
from .keys import OWNERS, SENTENCE_MODEL_KEY, SENTENCE_QUALITY, embeddings_key

# Part of the asset's code version: a change of the training's code or recipe retrains.
TRAINING_VERSION = "1"
# Dagster's step priority (higher first; 0 for every other step).
TRAINING_PRIORITY = -10


def build_sentence_model_asset(steps: int) -> dg.AssetsDefinition:
    """The sentence model, trained after the ATT&CK sources' embeddings (its gate reads their vectors)."""
    recipe = Recipe(steps=steps)

    @dg.asset(
        key=SENTENCE_MODEL_KEY,
        deps=[embeddings_key(source) for source in SOURCES],
        group_name="models",
        code_version=f"{TRAINING_VERSION}|{sorted(recipe.as_dict().items())}",
        automation_condition=on_new_inputs(),
        owners=OWNERS,
        kinds={"pytorch", "onnx", "postgres"},
        pool=EMBEDDING_POOL,
        # Last among the steps ready in a run: a first build embeds every source (vector search over the whole
        # store) before the training's half hour, not after it.
        op_tags={"dagster/priority": str(TRAINING_PRIORITY)},
        check_specs=[
            dg.AssetCheckSpec(
                SENTENCE_QUALITY,
                asset=SENTENCE_MODEL_KEY,
                description=f"On the held-back actors' procedure examples, the new model's {GATE_FIGURE} beats the "
                f"model serving the sentence path by at least {MIN_GAIN} (else it is not promoted).",
            )
        ],
        description="The general embedding model fine-tuned on ATT&CK's procedure examples and technique texts "
        "(the register of threat reports), exported to int8, its vectors of the ATT&CK sources embedded, and "
        "promoted to serve the sentence path when it passes its quality gate. Same inputs, same model.",
    )
    def sentence_model(
        context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        models_dir = get_settings().models_dir
        config = TrainingConfig(
            base_model=embedder.model,
            models_dir=models_dir,
            recipe=recipe,
        )

        def encoders(model_id: str):  # noqa: ANN202 - a TextModel
            return document_encoder(
                model_id, batch_size=embedder.batch_size, threads=embedder.threads, cache_dir=models_dir
            )

        with store.connect() as conn:
            outcome = train_sentence_model(conn, store.sql_path(), config, encoders, progress=context.log.info)
        figures = {
            **{f"validation/{k}": v for k, v in outcome.validation.items()},
            **{f"baseline/{k}": v for k, v in outcome.baseline.items()},
        }
        yield dg.AssetCheckResult(
            check_name=SENTENCE_QUALITY,
            passed=outcome.passed,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"model": outcome.served_model, "compared_with": outcome.baseline_model, **figures},
        )
        context.log.info(
            f"{outcome.served_model}: {GATE_FIGURE} {outcome.validation[GATE_FIGURE]} against "
            f"{outcome.baseline[GATE_FIGURE]} of {outcome.baseline_model}; "
            + ("promoted" if outcome.promoted else "kept as it was")
        )
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(outcome.model_id),
            metadata={
                "model": outcome.served_model,
                "attack_version": outcome.versions.get("mitre_attack") or "",
                "procedures_version": outcome.versions.get("mitre_attack_procedures") or "",
                "trained": outcome.trained,
                "train_seconds": outcome.train_seconds,
                "embedded": outcome.embedded,
                "passed": outcome.passed,
                "promoted": outcome.promoted,
                "folder": dg.MetadataValue.path(str(Path(models_dir) / "trained" / outcome.model_id)),
                **outcome.counts,
                **figures,
            },
        )

    return sentence_model
