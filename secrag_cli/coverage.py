"""`secrag coverage --layer FILE`: the coverage of a Navigator layer's techniques, in process against the configured
store (as POST /v1/coverage with a technique_layer), written as a Navigator layer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from serving.contract.coverage_models import CoverageResponse
    from serving.contract.layer_models import LayerIn


@click.command("coverage")
@click.option(
    "--layer",
    "layer_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An ATT&CK Navigator layer (JSON, format 4.5 or 4.4; a file of one layer, or a list holding one).",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the coverage's Navigator layer (JSON, format 4.5) to this file.",
)
@click.option("--gaps", is_flag=True, help="Write only the techniques with no detection to --out.")
@click.option(
    "--api-key",
    default=None,
    help="Count as this API key (its tenant's notes count too); unset: public documents only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole response as JSON.")
def coverage(layer_path: Path, out_path: Path | None, gaps: bool, api_key: str | None, as_json: bool) -> None:
    """What the store holds for the techniques of a Navigator layer: detections, tests, countermeasures."""
    from serving.access.keys import load_api_keys
    from serving.access.quotas import Gate
    from serving.api.app import start_service, stop_service
    from serving.contract.coverage_models import MAX_COVERAGE_TECHNIQUES, CoverageRequest
    from serving.contract.errors import ApiError, UnknownApiKey
    from serving.coverage.layer import only_techniques
    from serving.coverage.paging import joined
    from serving.observability.prometheus import Exposition
    from serving.settings import get_serving_settings

    settings = get_serving_settings().model_copy(update={"warm_up": False})  # one request: nothing to warm
    layer = read_layer_file(layer_path, settings.max_body_bytes)
    try:
        principal = Gate(load_api_keys(settings.api_keys_file), settings).caller(api_key, "cli").principal
    except UnknownApiKey:
        raise click.UsageError("unknown API key (see SECRAG_API_KEYS_FILE)") from None
    service = start_service(settings, Exposition())
    try:
        asked = CoverageRequest(technique_layer=layer, layer=True, limit=MAX_COVERAGE_TECHNIQUES)
        pages = [service.coverage.coverage(asked, principal)]
        while pages[-1].next_cursor is not None:  # every page: the layer written is the whole layer's
            pages.append(
                service.coverage.coverage(asked.model_copy(update={"cursor": pages[-1].next_cursor}), principal)
            )
        response = joined(pages)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        stop_service(service)
    if out_path is not None and response.layer is not None:
        written = only_techniques(response.layer, response.gaps.no_detection, "gaps") if gaps else response.layer
        out_path.write_text(written.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(response.model_dump(mode="json"), indent=2))
        return
    _table(response)
    if out_path is not None:
        what = "the gaps' layer" if gaps else "Navigator layer"
        click.echo(f"{what[0].upper()}{what[1:]} written to {out_path}")


def read_layer_file(path: Path, max_bytes: int) -> LayerIn:
    """One layer of a file (a layer, or the Navigator's list of layers holding one), as the API reads it."""
    from pydantic import ValidationError

    from secrag.errors import ParseError
    from secrag.files.safe_json import load
    from serving.contract.layer_models import LayerIn

    if path.stat().st_size > max_bytes:
        raise click.UsageError(f"{path} is larger than {max_bytes} bytes (SECRAG_MAX_BODY_BYTES, as the API reads)")
    try:
        loaded: Any = load(path.read_bytes())
    except ParseError as exc:
        raise click.UsageError(f"{path}: {exc}") from None
    if isinstance(loaded, list):
        if len(loaded) != 1:
            raise click.UsageError(f"{path} holds {len(loaded)} layers: save the one to read on its own")
        loaded = loaded[0]
    try:
        return LayerIn.model_validate(loaded)
    except ValidationError as exc:
        said = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'layer'}: {e['msg']}" for e in exc.errors()[:5])
        raise click.UsageError(f"{path} is not a layer this reads: {said}") from None


def _table(response: CoverageResponse) -> None:
    click.echo(f"{'technique':<10} {'detections':>10} {'tests':>5} {'countermeasures':>15}  name")
    for t in response.techniques:
        click.echo(
            f"{t.technique_id:<10} {t.detections.count:>10} {t.tests.count:>5} {t.countermeasures.count:>15}  "
            f"{t.name or ''}"
        )
    click.echo(f"{len(response.techniques)} techniques, {len(response.gaps.no_detection)} with no detection")
    report = response.technique_layer
    if report is not None:
        left_out = [
            f"{len(ids)} {why} ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})"
            for why, ids in (
                ("unknown", report.unknown),
                ("revoked", report.revoked),
                ("deprecated", report.deprecated),
                ("disabled", report.disabled),
            )
            if ids
        ]
        if left_out:
            click.echo(f"left out of layer {report.name!r}: {'; '.join(left_out)}", err=True)
