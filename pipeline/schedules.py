"""Schedules: an hourly run of the freshness checks (refreshes are declarative: pipeline/automation.py)."""

import dagster as dg

HOURLY = "17 * * * *"


def build_freshness_schedule(check_keys: list[dg.AssetCheckKey]) -> dg.ScheduleDefinition:
    """Hourly evaluation of every source's freshness and refresh-health checks (without materializing anything)."""
    job = dg.define_asset_job(
        "freshness_checks",
        selection=dg.AssetSelection.checks(*check_keys),
        description="Freshness and last-refresh health checks of every online source.",
    )
    return dg.ScheduleDefinition(
        name="hourly_freshness_checks",
        description="Every hour at minute 17 (UTC), runs the freshness_checks job: whether each online source's "
        "upstream answered within two poll intervals and its last refresh did not fail. Materializes nothing.",
        cron_schedule=HOURLY,
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        execution_timezone="UTC",
    )
