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

from bird.files import append_text, read_json, refuse_links_leaving, write_json, write_text
from bird.state import SearchState
from bird.types import Candidate, Report, TrainResult, VerifyResult

__all__ = ["RunDir", "write_json", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        refuse_links_leaving(self.root)  # a received or re-used directory cannot redirect our writes
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
        self._append("events.jsonl", {"t": round(time.time(), 3), "event": name, **fields})
        for listener in self.listeners:
            listener(name, fields)

    def candidate_dir(self, cid: str) -> Path:
        path = self.root / "candidates" / cid
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_generated(self, cand: Candidate) -> None:
        d = self.candidate_dir(cand.id)
        write_json(d / "prompt.json", cand.messages)
        write_text(d / "response.txt", cand.response)
        if cand.code is not None:
            write_text(d / "reward.py", cand.code)

    def write_verified(self, cid: str, result: VerifyResult) -> None:
        write_json(self.candidate_dir(cid) / "verify.json", {
            "ok": result.ok, "failure": result.failure.to_json() if result.failure else None,
            "components": list(result.components), "checks": result.checks})

    def write_candidate(self, cand: Candidate, result: TrainResult | None, report: Report | None,
                        score: float | None) -> None:
        d = self.candidate_dir(cand.id)
        if report is not None:
            write_text(d / "feedback.txt", report.feedback)
        write_json(d / "candidate.json", {
            "id": cand.id, "iteration": cand.iteration, "index": cand.index, "parent_id": cand.parent_id,
            "operator": cand.operator, "co_parents": list(cand.co_parents),
            "status": "failed" if cand.failure else "trained" if result is not None and result.ok else "untrained",
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
        append_text(self.root / name, json.dumps(record, default=str) + "\n")

    def write_screen(self, cid: str, screen: str, verdict: dict[str, Any], trained: bool) -> None:
        """One line per screen verdict in screens.jsonl; `training` says whether the candidate went on to train."""
        summary = {k: v for k, v in verdict.items() if k not in ("worst_success", "best_failure")}
        self._append("screens.jsonl", {"id": cid, "screen": screen, **summary,
                                       "training": "attempted" if trained else "skipped"})
        self.event("candidate_screened", id=cid, screen=screen, ok=verdict.get("ok"))

    def write_population(self, state: SearchState) -> None:
        """One line per generation in population.jsonl: the surviving members with their fitness and metrics."""
        members = [{"id": cid, "fitness": state.fitness(cid),
                    "metrics": state.reports[cid].stats.get("metrics") if cid in state.reports else None}
                   for cid in state.population]
        self._append("population.jsonl", {"iteration": state.iteration, "members": members})

    def write_search_structures(self, state: SearchState) -> None:
        """islands.jsonl (one line per iteration: admissions, migrations, members) and critics.json (the critic
        programs), when the search keeps them."""
        if state.island_log and state.island_log[-1]["iteration"] == state.iteration:
            self._append("islands.jsonl", state.island_log[-1])
        if state.critics:
            write_json(self.root / "critics.json", state.critics)

    def write_demo_scores(self, state: SearchState, cands: list[Candidate]) -> None:
        """candidates/<id>/demo_fitness.json: the candidate's fitness metrics on the demonstrations."""
        for cand in cands:
            report = state.reports.get(cand.id)
            if report is not None and "metrics" in report.stats:
                write_json(self.candidate_dir(cand.id) / "demo_fitness.json", report.stats["metrics"])

    def write_wave(self, state: SearchState, cands: list[Candidate], verified: dict[str, VerifyResult]) -> None:
        """A wave's generated candidates, their verify results and screen verdicts, with their events."""
        for c in cands:
            self.write_generated(c)
            self.event("candidate_generated", id=c.id, failure=c.failure.to_json() if c.failure else None)
        for cid, vr in verified.items():
            self.write_verified(cid, vr)
            self.event("candidate_verified", id=cid, ok=vr.ok, failure=vr.failure.to_json() if vr.failure else None)
            for name, verdict in state.screens.get(cid, {}).items():
                self.write_screen(cid, name, verdict, trained=vr.ok)

    def write_iteration(self, state: SearchState, cands: list[Candidate], results: dict[str, TrainResult],
                        reports: dict[str, Report], scores: dict[str, float | None]) -> None:
        """The iteration's search structures and, per candidate, candidate.json, feedback, judge scores and the LLM
        passes' records (thought.json, ...), each announced by a candidate_trained event."""
        if state.demos is not None:
            self.write_demo_scores(state, cands)
        if state.population:
            self.write_population(state)
        self.write_search_structures(state)
        for c in cands:
            report = reports.get(c.id)
            self.write_candidate(c, results.get(c.id), report, scores.get(c.id))
            if report is not None and "judge" in report.stats:
                write_json(self.candidate_dir(c.id) / "judge.json", report.stats)
            for name, data in state.records.pop(c.id, {}).items():
                write_json(self.candidate_dir(c.id) / name, data)
            self.event("candidate_trained", id=c.id, failure=c.failure.to_json() if c.failure else None,
                       fitness=report.fitness if report else None, score=scores.get(c.id))

    def write_final(self, candidate_id: str, seeds: list[int], results: list[TrainResult]) -> list[float]:
        """final/final.json for the returned reward's retrain on fresh seeds; returns the scores of the seeds that
        trained."""
        scores = [r.shipped_checkpoint.score for r in results if r.ok]
        write_json(self.root / "final" / "final.json", {
            "candidate_id": candidate_id, "seeds": seeds,
            "scores": [r.shipped_checkpoint.score if r.ok else None for r in results],
            "checkpoints": [r.checkpoint_choice for r in results],
            "failures": [r.failure.to_json() if r.failure else None for r in results],
            "videos": [[str(Path(v).relative_to(self.root)) for v in r.videos] for r in results]})
        self.event("final_retrain", candidate=candidate_id, seeds=seeds, scores=scores)
        return scores

    def candidate_rows(self, ids: list[str]) -> list[dict[str, Any]]:
        """The candidate.json of each id that has one, in the order given (the end-of-search summary table)."""
        paths = [self.root / "candidates" / cid / "candidate.json" for cid in ids]
        return [read_json(p, "record", self.root) for p in paths if p.exists()]
