"""RunTracker: turns a search's run events into tracker metrics, and its end into a summary and artefacts.

It listens to RunDir events (candidate_trained, iteration_done, final_retrain), so the loop only opens and closes
it. A tracker that fails mid-run is recorded once (event `tracker_error`) and switched off; the search goes on.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bird.files import read_json, write_json
from bird.tracking.base import NullTracker, Tracker, TrackerUnavailable

__all__ = ["RunTracker", "open_tracker", "TRACKER_FILE"]

TRACKER_FILE = "tracker.json"  # the tracker run this search logs to: a resumed search continues it


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


class RunTracker:
    """Feeds one Tracker from a run's events; `finish(result)` logs the summary, reward code and clips."""

    def __init__(self, tracker: Tracker, run: Any, generator: Any, log_videos: bool = True) -> None:
        self.tracker, self.run, self.generator, self.log_videos = tracker, run, generator, log_videos
        self.n_candidates = 0
        self.failed: str | None = None

    def _safe(self, what: str, fn: Any, *args: Any) -> None:
        if self.failed is not None:
            return
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - a tracker problem never stops the search; it is recorded
            self.failed = f"{what}: {type(exc).__name__}: {exc}"[:500]
            self.run.event("tracker_error", tracker=self.tracker.name, error=self.failed)

    def on_event(self, name: str, fields: dict[str, Any]) -> None:
        if name == "search_resumed":  # candidate steps go on from the candidates the checkpoint kept
            self.n_candidates = len(list(Path(self.run.root).glob("candidates/*/candidate.json")))
        elif name == "candidate_trained":
            metrics = {"candidate/fitness": _num(fields.get("fitness")), "candidate/score": _num(fields.get("score")),
                       "candidate/failed": float(fields.get("failure") is not None)}
            self._safe("log candidate", self.tracker.log_metrics, _present(metrics), "candidate", self.n_candidates)
            self.n_candidates += 1
        elif name == "iteration_done":
            totals = self.generator.totals()
            metrics = {"iteration/best_fitness": _num(fields.get("best_fitness")),
                       "iteration/best_score": _num(fields.get("best_score")),
                       "iteration/env_steps": _num(fields.get("env_steps_cum")),
                       "iteration/n_candidates": _num(fields.get("n_candidates")),
                       "iteration/n_failed": _num(fields.get("n_failed")),
                       "iteration/llm_calls": _num(totals.get("calls")),
                       "iteration/llm_cached_calls": _num(totals.get("cached_calls")),
                       "iteration/input_tokens": _num(totals.get("input_tokens")),
                       "iteration/output_tokens": _num(totals.get("output_tokens")),
                       "iteration/cost_usd": _num(totals.get("cost_usd"))}
            self._safe("log iteration", self.tracker.log_metrics, _present(metrics), "iteration",
                       int(fields.get("iteration", 0)))
        elif name == "final_retrain":
            for k, score in enumerate(fields.get("scores") or []):
                self._safe("log final", self.tracker.log_metrics, _present({"final/score": _num(score)}), "final", k)

    def finish(self, result: dict[str, Any] | None) -> None:
        """Summary scalars, the returned reward's code, result.json, config and clips; then close the run."""
        if isinstance(self.tracker, NullTracker):
            return
        root = Path(self.run.root)
        if result is not None:
            summary = {k: _num(result.get(k)) for k in ("returned_score", "env_steps", "llm_calls", "llm_cached_calls",
                                                        "cost_usd", "wall_s", "n_candidates", "n_failed")}
            self._safe("log summary", self.tracker.log_summary, _present(summary))
            code = (result.get("returned") or {}).get("code_path")
            if code and (root / code).is_file():
                self._safe("log reward", self.tracker.log_artifact, root / code, "reward")
            for name, kind in (("result.json", "result"), ("config.yaml", "config")):
                if (root / name).is_file():
                    self._safe(f"log {name}", self.tracker.log_artifact, root / name, kind)
            for k, clip in enumerate((result.get("videos") or {}).get("clips", [])):
                path = root / clip["video"]
                if self.log_videos and path.is_file():
                    caption = f"{clip.get('description', '')} | seed {clip.get('training_seed')} | score {clip.get('score')}"
                    self._safe("log video", self.tracker.log_video, path, caption, k)
        if self.failed is not None:  # still release what the tracker holds (files, a service process)
            try:
                self.tracker.close(False)
            except Exception:  # noqa: BLE001, S110 - already recorded as tracker_error
                pass
            return
        self._safe("close", self.tracker.close, result is not None)
        if self.failed is None:
            self.run.event("tracker_closed", tracker=self.tracker.name, location=self.tracker.location())


def _present(metrics: dict[str, float | None]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if v is not None}


def open_tracker(cfg: Any, run: Any, generator: Any) -> RunTracker:
    """Open the `tracker.backend` run for this search and subscribe it to the run's events.

    Raises TrackerUnavailable (before any work is done) when the backend's package is missing.
    """
    from bird.config.load import config_hash
    from bird.registry import get

    meta = {"name": f"{cfg.method} {cfg.env.id} seed{cfg.seed}", "method": cfg.method, "env": cfg.env.id,
            "seed": cfg.seed, "budget": cfg.budget.name, "config_hash": config_hash(cfg), "config": _config(cfg),
            "resume": _previous(Path(run.root), cfg.tracker.backend)}
    try:
        tracker = get("tracker", cfg.tracker.backend)(cfg.tracker, Path(run.root), meta)
    except ImportError as exc:
        raise TrackerUnavailable(f"tracker={cfg.tracker.backend} needs its package ({exc.name or exc}); "
                                 "install the tracker extra: pip install -e '.[track]'") from exc
    except Exception as exc:  # noqa: BLE001 - any failure to open is reported before the search does work
        raise TrackerUnavailable(f"tracker={cfg.tracker.backend} could not start: {type(exc).__name__}: {exc}") from exc
    observer = RunTracker(tracker, run, generator, cfg.tracker.log_videos)
    if not isinstance(tracker, NullTracker):
        write_json(Path(run.root) / TRACKER_FILE, {"backend": tracker.name, **tracker.identity()})
        run.listeners.append(observer.on_event)
        run.event("tracker_opened", tracker=tracker.name, location=tracker.location(),
                  continued=meta["resume"] is not None)
    return observer


def _previous(root: Path, backend: str) -> dict[str, Any] | None:
    """The tracker run an earlier session of this search opened (tracker.json), when it used the same backend: a
    resumed search continues it. A fresh search never sees one (the previous run's records are cleared first)."""
    try:
        saved = read_json(root / TRACKER_FILE, "record", root)
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) and saved.get("backend") == backend else None


def _config(cfg: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from bird.tracking.base import flatten

    return flatten(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True))  # type: ignore[arg-type]
