"""Child services of `secrag run`: each in its own process group, stopped group-wide by PID."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 20.0


def _default_signals() -> None:  # in the child, between fork and exec
    # A child inherits ignored SIGINT from a script's background job; reset, or it ignores Ctrl-C/SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def spawn(command: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start a command in a new session, so one signal to its group reaches all its children."""
    return subprocess.Popen(list(command), cwd=cwd, env=dict(env), start_new_session=True, preexec_fn=_default_signals)


def stop_group(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE_SECONDS) -> int:
    """SIGTERM the whole process group, SIGKILL it after `grace` seconds; the exit code."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("process group %s did not stop within %ss; killing it", proc.pid, grace)
    return proc.wait()
