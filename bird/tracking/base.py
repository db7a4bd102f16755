"""The tracker interface every backend implements, and the no-op tracker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["Tracker", "NullTracker", "TrackerUnavailable", "flatten"]


class TrackerUnavailable(RuntimeError):
    """The tracker's package is not installed (or cannot start): raised before the search does any work."""


class Tracker:
    """A run in an experiment tracker. Metrics come on named step axes ("iteration", "candidate", "final")."""

    name = "base"
    takes_videos = False  # whether log_video stores the clip itself

    def log_metrics(self, metrics: dict[str, float], axis: str, step: int) -> None:
        """Scalars at `step` of the `axis` step counter; keys look like "iteration/best_score"."""

    def log_summary(self, values: dict[str, float]) -> None:
        """Final scalars of the run (returned score, env steps, LLM calls, cost, wall time)."""

    def log_artifact(self, path: Path, kind: str) -> None:
        """Store a file (kind: "reward", "result", "config", "video")."""

    def log_video(self, path: Path, caption: str, step: int) -> None:
        """Store a clip where the tracker shows videos."""

    def location(self) -> str:
        """Where the logs are (a directory or URI), for the run's events."""
        return ""

    def identity(self) -> dict[str, Any]:
        """What a resumed search needs to continue this tracker run (written to tracker.json; passed back to the
        backend as meta["resume"])."""
        return {}

    def close(self, ok: bool) -> None:
        """Finish the run (ok=False marks it failed)."""


class NullTracker(Tracker):
    name = "none"


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out
