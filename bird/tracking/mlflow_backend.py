"""MLflow through MlflowClient (no global active run): params, step metrics, artefacts (reward code, result, clips).

Default store: a local file store at <run dir>/mlruns (`MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri
<that>`); tracker.uri may name a shared store, a database or a tracking server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from bird.config.schema import TrackerConfig
from bird.tracking.base import Tracker

__all__ = ["MlflowTracker"]

_MAX_PARAM_CHARS = 6000  # MLflow's limit on one param value


class MlflowTracker(Tracker):
    name = "mlflow"
    takes_videos = True  # as artefacts (the MLflow UI plays MP4 artefacts)

    def __init__(self, cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.uri = cfg.uri or (Path(cfg.dir) if cfg.dir else root / "mlruns").resolve().as_uri()
        if self.uri.startswith("file:"):
            # MLflow >= 3.7 keeps the file store in maintenance mode and refuses it unless opted in; it is the
            # one store that needs no database package or server, so bird opts in for file: URIs only.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri=self.uri)
        resume = meta.get("resume") or {}
        if resume.get("run_id") and resume.get("uri") == self.uri:  # a resumed search: the same run, running again
            self.run_id = resume["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            return  # params were logged by the first session (MLflow refuses a changed value)
        exp = self.client.get_experiment_by_name(cfg.project)
        exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(cfg.project)
        tags = {k: str(meta[k]) for k in ("method", "env", "seed", "budget", "config_hash")}
        self.run_id = self.client.create_run(exp_id, run_name=meta["name"], tags=tags).info.run_id
        params = [Param(k, str(v)[:_MAX_PARAM_CHARS]) for k, v in meta["config"].items()]
        for i in range(0, len(params), 100):  # MLflow takes at most 100 params per batch
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def log_metrics(self, metrics: dict[str, float], axis: str, step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in metrics.items()])

    def log_summary(self, values: dict[str, float]) -> None:
        self.log_metrics({f"summary/{k}": v for k, v in values.items()}, "summary", 0)

    def log_artifact(self, path: Path, kind: str) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path=kind)

    def log_video(self, path: Path, caption: str, step: int) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path=f"videos/{step}")

    def location(self) -> str:
        return f"{self.uri} (run {self.run_id})"

    def identity(self) -> dict[str, Any]:
        return {"uri": self.uri, "run_id": self.run_id}

    def close(self, ok: bool) -> None:
        self.client.set_terminated(self.run_id, "FINISHED" if ok else "FAILED")
