"""The run directory: status first, append-only events, one folder per candidate, result last (docs/rundir.md)."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bird.types import Candidate, Report, TrainResult, VerifyResult

__all__ = ["RunDir", "write_json"]

SCHEMA_VERSION = 1


def write_json(path: Path, data: Any) -> None:
    """Atomic write: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._started = _now()
        self._fields: dict[str, Any] = {}
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []  # called with every event (trackers)

    def status(self, state: str, error: str | None = None, **fields: Any) -> None:
        """Rewrite status.json; `fields` (method, iteration, env_steps, llm_calls, ...) are kept for later calls."""
        self._fields.update(fields)
        write_json(self.root / "status.json", {"state": state, "started": self._started, "updated": _now(),
                                               "pid": os.getpid(), "host": socket.gethostname(), "error": error,
                                               "schema_version": SCHEMA_VERSION, **self._fields})

    def event(self, name: str, **fields: Any) -> None:
        with open(self.root / "events.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"t": round(time.time(), 3), "event": name, **fields}, default=str) + "\n")
        for listener in self.listeners:
            listener(name, fields)

    def candidate_dir(self, cid: str) -> Path:
        path = self.root / "candidates" / cid
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_generated(self, cand: Candidate) -> None:
        d = self.candidate_dir(cand.id)
        write_json(d / "prompt.json", cand.messages)
        (d / "response.txt").write_text(cand.response)
        if cand.code is not None:
            (d / "reward.py").write_text(cand.code)

    def write_verified(self, cid: str, result: VerifyResult) -> None:
        write_json(self.candidate_dir(cid) / "verify.json", {
            "ok": result.ok, "failure": result.failure.to_json() if result.failure else None,
            "components": list(result.components), "checks": result.checks})

    def write_candidate(self, cand: Candidate, result: TrainResult | None, report: Report | None,
                        score: float | None) -> None:
        d = self.candidate_dir(cand.id)
        if report is not None:
            (d / "feedback.txt").write_text(report.feedback)
        write_json(d / "candidate.json", {
            "id": cand.id, "iteration": cand.iteration, "index": cand.index, "parent_id": cand.parent_id,
            "operator": cand.operator, "co_parents": list(cand.co_parents),
            "status": "failed" if cand.failure else "trained",
            "failure": cand.failure.to_json() if cand.failure else None,
            "fitness": report.fitness if report else None,
            "fitness_source": report.fitness_source if report else None,
            "score": score,
            "final_score": result.shipped_checkpoint.score if result and result.curve else None,
            "checkpoint": result.checkpoint_choice if result else None,
            "env_steps": result.env_steps if result else 0,
            "wall_s": round(result.wall_s, 3) if result else 0.0,
            "llm": cand.llm,
            "attempts": cand.attempts,
            "resampled": cand.resampled,
            "metrics": report.stats.get("metrics") if report else None,
        })

    def _append(self, name: str, record: dict[str, Any]) -> None:
        with open(self.root / name, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=str) + "\n")

    def write_screen(self, cid: str, screen: str, verdict: dict[str, Any], trained: bool) -> None:
        """One line per screen verdict in screens.jsonl; `training` says whether the candidate went on to train."""
        summary = {k: v for k, v in verdict.items() if k not in ("worst_success", "best_failure")}
        self._append("screens.jsonl", {"id": cid, "screen": screen, **summary,
                                       "training": "attempted" if trained else "skipped"})
        self.event("candidate_screened", id=cid, screen=screen, ok=verdict.get("ok"))

    def write_population(self, state: Any) -> None:
        """One line per generation in population.jsonl: the surviving members with their fitness and metrics."""
        members = [{"id": cid, "fitness": state.fitness(cid),
                    "metrics": state.reports[cid].stats.get("metrics") if cid in state.reports else None}
                   for cid in state.population]
        self._append("population.jsonl", {"iteration": state.iteration, "members": members})

    def write_search_structures(self, state: Any) -> None:
        """islands.jsonl (one line per iteration: admissions, migrations, members) and critics.json (the critic
        programs), when the search keeps them."""
        if state.island_log and state.island_log[-1]["iteration"] == state.iteration:
            self._append("islands.jsonl", state.island_log[-1])
        if state.critics:
            write_json(self.root / "critics.json", state.critics)

    def write_demo_scores(self, state: Any, cands: list[Candidate]) -> None:
        """candidates/<id>/demo_fitness.json: the candidate's fitness metrics on the demonstrations."""
        for cand in cands:
            report = state.reports.get(cand.id)
            if report is not None and "metrics" in report.stats:
                write_json(self.candidate_dir(cand.id) / "demo_fitness.json", report.stats["metrics"])
