"""`secrag map FILE`: the ATT&CK techniques of a text, in process against the configured store (as POST /v1/map)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

if TYPE_CHECKING:
    from serving.contract.map_models import MapResponse

SHOWN_SENTENCES = 3
SENTENCE_CHARS = 100


@click.command("map")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option(
    "--layer",
    "layer_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the ATT&CK Navigator layer (JSON, format 4.5) to this file.",
)
@click.option(
    "--min-score",
    type=click.FloatRange(0, 1),
    default=None,
    help="Leave out techniques scoring under this (default: the search config's map.min_score).",
)
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True, help="Most techniques shown.")
@click.option(
    "--api-key",
    default=None,
    help="Map as this API key (its tenant's documents vote too); unset: public documents only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole response as JSON.")
def map_file(
    file: IO[str], layer_path: Path | None, min_score: float | None, limit: int, api_key: str | None, as_json: bool
) -> None:
    """Map FILE (a threat report as text; - for standard input) to ATT&CK techniques."""
    from pydantic import ValidationError

    from serving.access.keys import load_api_keys
    from serving.access.quotas import Gate
    from serving.api.app import start_service, stop_service
    from serving.contract.errors import UnknownApiKey
    from serving.contract.map_models import MapRequest
    from serving.mapping.mapper import map_text
    from serving.observability.prometheus import Exposition
    from serving.settings import get_serving_settings

    settings = get_serving_settings().model_copy(update={"warm_up": False})  # one request: nothing to warm
    try:
        request = MapRequest(text=file.read(), min_score=min_score, limit=limit, layer=layer_path is not None)
    except ValidationError as exc:
        raise click.UsageError("; ".join(e["msg"] for e in exc.errors())) from None
    try:
        principal = Gate(load_api_keys(settings.api_keys_file), settings).caller(api_key, "cli").principal
    except UnknownApiKey:
        raise click.UsageError("unknown API key (see SECRAG_API_KEYS_FILE)") from None
    service = start_service(settings, Exposition())
    try:
        response = map_text(service.model.current(), service.limits, service.map_capacity, request, principal)
    finally:
        stop_service(service)
    if layer_path is not None and response.layer is not None:
        layer_path.write_text(response.layer.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(response.model_dump(mode="json"), indent=2))
        return
    _table(response)
    if layer_path is not None:
        click.echo(f"Navigator layer written to {layer_path}")


def _table(response: MapResponse) -> None:
    click.echo(f"{'technique':<10} {'score':>6} {'sentences':>9}  {'tactics':<28} name")
    for t in response.techniques:
        tactics = ",".join(t.tactics)
        click.echo(f"{t.technique_id:<10} {t.score:>6.3f} {len(t.sentences):>9}  {tactics[:28]:<28} {t.name}")
        for s in t.sentences[:SHOWN_SENTENCES]:
            text = " ".join(s.text.split())
            short = text if len(text) <= SENTENCE_CHARS else text[: SENTENCE_CHARS - 3] + "..."
            click.echo(f"{'':>12}[{s.start}:{s.end}] {short}")
    more = f"; {response.omitted} more over --limit" if response.omitted else ""
    click.echo(
        f"{len(response.techniques)} techniques at or over min_score {response.min_score} in {response.sentences} "
        f"sentences{more}"
    )
    if response.unanswered:
        reasons = sorted({u.reason for u in response.unanswered})
        click.echo(
            f"{len(response.unanswered)} sentences not searched ({', '.join(reasons)}); "
            "SECRAG_MAP_TIMEOUT_SECONDS sets the map's deadline",
            err=True,
        )
