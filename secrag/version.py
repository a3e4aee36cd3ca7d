"""The version of secrag that is running: the installed distribution's, else the source tree's."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    try:
        return metadata.version("secrag")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        from secrag import __version__

        return __version__
