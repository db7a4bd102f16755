"""`pack`: completed run directories (and the LLM answers their journals name) into one bundle file."""

from __future__ import annotations

import datetime as dt
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bird.bundle.archive import FORMAT, SCHEMA_VERSION, BundleError, sha256, write_archive
from bird.bundle.compare import EXECUTION_FILES, MEDIA_SUFFIXES
from bird.bundle.transcript import Transcript, collect_transcript
from bird.environment import describe_environment
from bird.files import read_bytes, read_json
from bird.llm.cache import ResponseCache, default_cache_dir

__all__ = ["pack", "PackResult", "TEXT_SUFFIXES", "cell_id"]

TEXT_SUFFIXES = (".json", ".jsonl", ".csv", ".py", ".txt", ".yaml", ".md")
# run files a bundle never holds: pickles (an earlier bird's checkpoint, VecNormalize), policies, locks, logs, tracker
# stores
_NEVER = (".pkl", ".zip", "policy.npz", ".lock", ".log", ".tmp", ".pt", ".pth")
_HYDRA_KEPT = (".hydra/overrides.yaml",)  # the command line's overrides; hydra.yaml holds host paths
# records of the execution a comparison ignores but a reader of the bundle may want
_RECORDS = ("config.yaml", "environment.json", "events.jsonl", "status.json", "lost_llm_calls.jsonl")


@dataclass
class PackResult:
    path: Path
    size: int
    cells: list[dict[str, Any]]
    left_out: list[str]


def cell_id(result: dict[str, Any]) -> str:
    """`<method>/<suite>-<task>/seed<k>`: a run's name inside a bundle."""
    return f"{result['method']}/{str(result['env']).replace('/', '-')}/seed{result['seed']}"


def _runs(paths: list[Path]) -> list[Path]:
    """Run directories under `paths` (a run directory, or a sweep folder holding them), in path order."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if (p / "config.yaml").is_file() and (p / "status.json").is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(s.parent for s in p.rglob("status.json") if (s.parent / "config.yaml").is_file())
        else:
            raise BundleError(f"{p}: neither a run directory nor a folder holding run directories")
    return list(dict.fromkeys(out))


def _files(run: Path, with_media: bool) -> tuple[list[str], list[str]]:
    """(files to pack, files left out) of a run directory, as relative POSIX paths."""
    keep, left = [], []
    for path in sorted(p for p in run.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(run).as_posix()
        first = rel.split("/", 1)[0]
        tracker_or_state = first in EXECUTION_FILES and first not in _RECORDS
        if rel in _HYDRA_KEPT:
            keep.append(rel)
        elif tracker_or_state or rel.endswith(_NEVER):
            left.append(rel)
        elif rel.endswith(TEXT_SUFFIXES) or (with_media and rel.endswith(MEDIA_SUFFIXES) and _no_pickle(path)):
            keep.append(rel)
        else:
            left.append(rel)
    return keep, left


def _no_pickle(path: Path) -> bool:
    """An .npz whose every array loads without pickle (object arrays need it); other media are not pickles."""
    if path.suffix != ".npz":
        return True
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            for name in data.files:
                data[name]
    except Exception:  # noqa: BLE001 - torn or corrupt (BadZipFile, a header's TokenError, ...): left out, no crash
        return False
    return True


def _cache_for(run: Path, cache_dir: Path | None) -> ResponseCache:
    """The response cache the run used: --cache-dir, else the run's llm.cache_dir, else the machine default. The run's
    config is read as data (no interpolation resolved); the cache is read by request keys only."""
    if cache_dir is not None:
        return ResponseCache(cache_dir)
    from bird.config.load import ConfigError
    from bird.config.received import load_received

    try:
        configured = (load_received(run / "config.yaml").get("llm") or {}).get("cache_dir")
    except (ConfigError, AttributeError) as exc:
        raise BundleError(f"{run}: {exc}") from None
    return ResponseCache(configured if isinstance(configured, str) and configured else default_cache_dir())


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf, index=False)
    return buf.getvalue()


def _candidate_rows(cell: str, run: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((run / "candidates").glob("*/candidate.json")):
        code = path.parent / "reward.py"
        try:
            c = read_json(path, "record", run)
            code_sha = sha256(read_bytes(code, "text", run)) if code.exists() else None
        except (OSError, ValueError) as exc:
            raise BundleError(f"{run}: {path.relative_to(run).parent} is not packed ({str(exc)[:200]})") from None
        rows.append({"cell": cell, "id": c["id"], "iteration": c["iteration"], "index": c["index"],
                     "parent_id": c.get("parent_id"), "operator": c.get("operator"), "status": c.get("status"),
                     "failure_kind": (c.get("failure") or {}).get("kind"), "fitness": c.get("fitness"),
                     "score": c.get("score"), "final_score": c.get("final_score"), "env_steps": c.get("env_steps"),
                     "reward_path": f"runs/{cell}/candidates/{c['id']}/reward.py" if code.exists() else None,
                     "reward_sha256": code_sha})
    return rows


def _replayable(t: Transcript) -> tuple[bool, str | None]:
    if t.missing:
        return False, f"{len(t.missing)} answer(s) missing from the response cache when packed"
    if t.unkeyed:
        return False, f"{t.unkeyed} call(s) journalled without a request key (a run older than bird.bundle)"
    if t.failed:
        return False, f"{len(t.failed)} call(s) failed when recorded (a failure has no answer to replay)"
    return True, None


def pack(runs: list[Path], out: Path, with_media: bool = False, cache_dir: Path | None = None,
         allow_incomplete: bool = False) -> PackResult:
    """Pack completed runs into the bundle `out` (docs/bundles.md). Raises BundleError for a run that is not
    completed, or (unless `allow_incomplete`) whose transcript the cache cannot complete."""
    dirs = _runs([Path(r) for r in runs])
    if not dirs:
        raise BundleError(f"no run directories under {', '.join(map(str, runs))}")
    members: dict[str, bytes] = {}
    cells, run_rows, cand_rows, call_rows, left_out, problems = [], [], [], [], [], []
    for run in dirs:
        try:
            result = read_json(run / "result.json", "result", run)
        except (OSError, ValueError):
            raise BundleError(f"{run}: no readable result.json; only completed runs can be packed") from None
        if result.get("status") != "completed":
            raise BundleError(f"{run}: status {result.get('status')!r}; only completed runs can be packed")
        cell = cell_id(result)
        if any(c["id"] == cell for c in cells):
            cell = f"{cell}-{result['config_hash']}"
        if any(c["id"] == cell for c in cells):
            raise BundleError(f"{run}: a second run of {cell} with the same config; pack one of them")
        transcript = collect_transcript(run, _cache_for(run, cache_dir))
        ok, why = _replayable(transcript)
        if transcript.missing and not allow_incomplete:
            problems.append(f"{run} ({cell}): {why}; pass --cache-dir (the cache the run used) or "
                            "--allow-incomplete")
        keep, left = _files(run, with_media)
        left_out += [f"runs/{cell}/{rel}" for rel in left]
        for rel in keep:
            try:  # a regular file inside the run: a planted link never packs a file of this machine
                members[f"runs/{cell}/{rel}"] = read_bytes(run / rel, "media", run)
            except OSError as exc:
                raise BundleError(f"{run}: {rel} is not packed ({exc})") from None
        lines = "".join(json.dumps(line, sort_keys=True) + "\n" for line in transcript.lines)
        members[f"transcripts/{cell}.jsonl"] = lines.encode()
        cells.append({"id": cell, "method": result["method"], "env": result["env"], "seed": result["seed"],
                      "budget": result.get("budget"), "config_hash": result.get("config_hash"),
                      "returned_score": result.get("returned_score"), "generator": result.get("generator"),
                      "llm_calls": result.get("llm_calls"), "determinism": result.get("determinism"),
                      "transcript": {"answers": len(transcript.lines), "missing": len(transcript.missing),
                                     "failed": len(transcript.failed), "unkeyed": transcript.unkeyed,
                                     "deterministic_calls": transcript.deterministic_calls},
                      "plugins": result.get("plugins") or [],
                      "environment_recorded": (run / "environment.json").is_file(),
                      "replayable": ok, "why_not": why})
        run_rows.append({"cell": cell, **{k: result.get(k) for k in (
            "method", "env", "suite", "task", "seed", "budget", "config_hash", "returned_score", "n_candidates",
            "n_failed", "llm_calls", "cost_usd", "env_steps", "wall_s", "stop_reason")}, "replayable": ok})
        cand_rows += _candidate_rows(cell, run)
        call_rows += [{"cell": cell, **{k: line[k] for k in ("seq", "key", "purpose", "iteration", "sample_index",
                                                             "provider", "model", "response_sha256")},
                       "input_tokens": line["response"].get("input_tokens"),
                       "output_tokens": line["response"].get("output_tokens"),
                       "cost_usd": line["response"].get("cost_usd")} for line in transcript.lines]
    if problems:
        raise BundleError("cannot pack a replayable bundle:\n  " + "\n  ".join(problems))
    members["index/runs.parquet"] = _parquet(run_rows)
    members["index/candidates.parquet"] = _parquet(cand_rows)
    members["index/llm_calls.parquet"] = _parquet(call_rows)
    env = describe_environment()
    manifest = {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "bird": env["bird"], "packed_on": env, "with_media": with_media, "cells": cells,
                "files": [{"path": name, "sha256": sha256(data), "size": len(data)}
                          for name, data in sorted(members.items())],
                "left_out": sorted(left_out)}
    size = write_archive(Path(out), manifest, members.items())
    return PackResult(Path(out), size, cells, sorted(left_out))
