"""`replay`: re-run a bundle's cells with llm.cache=replay from its transcripts, then compare with its results."""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.bundle.archive import BundleError
from bird.bundle.compare import Comparison, Tolerance, compare_runs, read_run
from bird.bundle.reader import Bundle
from bird.bundle.transcript import closest_difference
from bird.bundle.verify import verify
from bird.llm.cache import ReplayMissError, ResponseCache

__all__ = ["replay", "ReplayReport", "REPLAY_OVERRIDES"]

# what replay changes in a recorded config: answers from the bundle's transcript, no tracker, no progress display
REPLAY_OVERRIDES = ("llm.cache=replay", "tracker.backend=none", "run.progress=false")


@dataclass
class CellReplay:
    id: str
    status: str  # identical | within_tolerance | differs | request_mismatch | failed | not_replayable
    compared: str  # "bit-for-bit" | "within tolerance" | "-"
    expected: str  # what verify expected on this machine
    detail: str = ""
    wall_s: float = 0.0
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("identical", "within_tolerance")


@dataclass
class ReplayReport:
    bundle: Path
    out: Path
    cells: list[CellReplay]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        return {"bundle": str(self.bundle), "out": str(self.out), "ok": self.ok,
                "cells": [c.__dict__ for c in self.cells]}

    def render(self) -> str:
        lines = [f"replayed {len(self.cells)} cell(s) of {self.bundle} into {self.out}"]
        for c in self.cells:
            lines.append(f"  {c.id}: {c.status.upper()} (compared {c.compared}; expected {c.expected}; "
                         f"{c.wall_s:.1f} s)" + (f"\n    {c.detail}" if c.detail else ""))
            lines += [f"    {d}" for d in c.differences[:10]]
        lines.append("replay: every cell reproduced" if self.ok else "replay: FAILED")
        return "\n".join(lines)


def _fill_cache(bundle: Bundle, cells: list[str], cache: ResponseCache) -> None:
    """The selected cells' recorded answers, in the response cache's own layout."""
    for cid in cells:
        for line in bundle.transcript(cid):
            cache.put(line["key"], {"created": 0.0, "provider": line["provider"], "model": line["model"],
                                    "request": line["request"], "response": line["response"]})


def _select(bundle: Bundle, wanted: list[str]) -> list[str]:
    """Cells named exactly, or by a prefix ("eureka/", "eureka/mujoco-hopper"); all when none is named."""
    ids = [c["id"] for c in bundle.cells]
    if not wanted:
        return ids
    out = []
    for w in wanted:
        hits = [i for i in ids if i == w or i.startswith(w.rstrip("/") + "/")]
        if not hits:
            raise BundleError(f"no cell {w!r} in {bundle.path}; cells: {ids}")
        out += hits
    return list(dict.fromkeys(out))


def _run_cell(recorded: Path, target: Path, cache_dir: Path, overrides: list[str]) -> dict[str, Any]:
    from bird.loop import search
    from bird.resume import saved_config

    cfg = saved_config(recorded, [*REPLAY_OVERRIDES, f"llm.cache_dir={cache_dir}", *overrides])
    return search(cfg, target)


def replay(path: str | Path, out: str | Path, cells: list[str] | None = None, overrides: list[str] | None = None,
           tolerance: dict[str, Tolerance] | None = None) -> ReplayReport:
    """Re-run the chosen cells (all by default) into `out/<cell id>/` and compare each with the bundle's run.

    Raises BundleError when the bundle fails verification or `out` already holds a cell."""
    check = verify(path)
    if not check.ok:
        raise BundleError("the bundle fails verification; nothing was replayed:\n  " + "\n  ".join(check.problems))
    bundle, out = Bundle(path), Path(out)
    chosen = _select(bundle, list(cells or []))
    for cid in chosen:
        if (out / cid).exists():
            raise BundleError(f"{out / cid} already exists; replay into a fresh folder")
    work = out / ".bundle"
    bundle.extract(work, "runs/")
    cache_dir = work / "llm_cache"
    _fill_cache(bundle, chosen, ResponseCache(cache_dir))
    expected = {c["id"]: c for c in check.cells}
    report = ReplayReport(Path(path), out, [])
    for k, cid in enumerate(chosen, 1):  # progress per cell, on stderr (the report goes to stdout)
        print(f"replay: cell {k}/{len(chosen)} {cid} ...", file=sys.stderr, flush=True)
        report.cells.append(_replay_cell(bundle, cid, work / "runs" / cid, out / cid, cache_dir,
                                         list(overrides or []), expected.get(cid, {}), tolerance))
        done = report.cells[-1]
        print(f"replay: cell {k}/{len(chosen)} {cid}: {done.status} ({done.wall_s:.1f} s)", file=sys.stderr,
              flush=True)
    (out / "replay_report.json").write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return report


def _replay_cell(bundle: Bundle, cid: str, recorded: Path, target: Path, cache_dir: Path, overrides: list[str],
                 expect: dict[str, Any], tolerance: dict[str, Tolerance] | None) -> CellReplay:
    meta = bundle.cell(cid)
    expectation = expect.get("expect", "-")
    if not meta.get("replayable"):
        return CellReplay(cid, "not_replayable", "-", expectation, meta.get("why_not") or "")
    start = time.monotonic()
    try:
        _run_cell(recorded, target, cache_dir, overrides)
    except ReplayMissError as exc:
        detail = str(exc)
        if exc.request is not None:
            calls = bundle.transcript(cid)
            detail = closest_difference(calls, exc.provider, exc.model, exc.request,
                                        exc.request.context.get("iteration"))
        return CellReplay(cid, "request_mismatch", "-", expectation, detail, time.monotonic() - start)
    except Exception as exc:  # noqa: BLE001 - one cell's failure is reported; the others still replay
        return CellReplay(cid, "failed", "-", expectation, f"{type(exc).__name__}: {exc}"[:2000],
                          time.monotonic() - start)
    wall = time.monotonic() - start
    comparison = compare_runs(read_run(recorded), read_run(target), tolerance)
    return _verdict(cid, comparison, expectation, wall)


def _verdict(cid: str, comparison: Comparison, expectation: str, wall: float) -> CellReplay:
    listed = [f"only in the bundle: {p}" for p in comparison.only_recorded] + \
             [f"only in the replay: {p}" for p in comparison.only_replayed] + [str(d) for d in comparison.differences]
    if comparison.identical:
        return CellReplay(cid, "identical", "bit-for-bit", expectation, "", wall)
    if expectation == "bit-for-bit":
        return CellReplay(cid, "differs", "bit-for-bit", expectation,
                          f"{len(listed)} difference(s) where bit-for-bit was expected", wall, listed)
    if comparison.within_tolerance:
        return CellReplay(cid, "within_tolerance", "within tolerance", expectation,
                          f"{len(listed)} number(s) differ within their tolerance", wall, listed)
    beyond = [str(d) for d in comparison.differences if not d.within_tolerance]
    return CellReplay(cid, "differs", "within tolerance", expectation,
                      f"{len(beyond)} difference(s) beyond tolerance", wall, listed)


def remove_work(out: Path) -> None:
    """Drop the extracted bundle copy under `out/.bundle` (the report and the replayed runs stay)."""
    shutil.rmtree(Path(out) / ".bundle", ignore_errors=True)
