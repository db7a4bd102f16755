"""`replay`: re-run a bundle's cells with llm.cache=replay from its transcripts, then compare with its results."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bird.bundle.archive import BundleError
from bird.bundle.compare import Comparison, Tolerance, compare_runs, read_run
from bird.bundle.plugins import check_plugins, config_plugins
from bird.bundle.reader import Bundle
from bird.bundle.transcript import closest_difference
from bird.bundle.verify import verify
from bird.config.load import ConfigError
from bird.files import write_json
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
    config_notes: list[str] = field(default_factory=list)  # received values replaced by this machine's, or kept

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
            lines += [f"    config: {n}" for n in c.config_notes]
            lines += [f"    {d}" for d in c.differences[:10]]
        lines.append("replay: every cell reproduced" if self.ok else "replay: FAILED")
        return "\n".join(lines)


def _fill_cache(bundle: Bundle, cells: list[str], cache: ResponseCache) -> None:
    """The selected cells' recorded answers, in the response cache's own layout (verify checked every key is its
    request's; the cache refuses any other name)."""
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


def _cell_config(recorded: Path, cache_dir: Path, overrides: list[str], trust: bool) -> tuple[Any, list[str]]:
    """The recorded config as data (bird/config/received.py): this machine's endpoints, paths and limits, the replay
    overrides, the user's; (config, what differed from the recording)."""
    from bird.resume import saved_config

    notes: list[str] = []
    return saved_config(recorded, [*REPLAY_OVERRIDES, f"llm.cache_dir={cache_dir}", *overrides], trust, notes), notes


def replay(path: str | Path, out: str | Path, cells: list[str] | None = None, overrides: list[str] | None = None,
           tolerance: dict[str, Tolerance] | None = None, trust_config: bool = False,
           plugins: list[str] | None = None) -> ReplayReport:
    """Re-run the chosen cells (all by default) into `out/<cell id>/` and compare each with the bundle's run.
    `plugins`: the plugin modules the user trusts replay to import (a cell's config names them).

    Raises BundleError when the bundle fails verification, a cell's config is refused (an interpolation, a limit
    looser than this machine's without `trust_config`), a cell needs a plugin that is not trusted or not importable
    here (bird/bundle/plugins.py), or `out` already holds a cell; nothing is run then."""
    check = verify(path)
    if not check.ok:
        raise BundleError("the bundle fails verification; nothing was replayed:\n  " + "\n  ".join(check.problems))
    bundle, out = Bundle(path), Path(out)
    chosen = _select(bundle, list(cells or []))
    check_plugins(bundle, chosen, list(plugins or []))
    for cid in chosen:
        if (out / cid).exists():
            raise BundleError(f"{out / cid} already exists; replay into a fresh folder")
    work = out / ".bundle"
    bundle.extract(work, "runs/")
    cache_dir = Path(tempfile.mkdtemp(prefix="llm_cache-", dir=work))  # fresh and private: never the user's cache
    configs = {}
    for cid in chosen:
        if bundle.cell(cid).get("replayable"):
            try:
                named = [f"plugins=[{','.join(config_plugins(bundle, cid))}]"]  # checked above: all trusted
                configs[cid] = _cell_config(work / "runs" / cid, cache_dir, [*named, *(overrides or [])], trust_config)
            except ConfigError as exc:
                raise BundleError(f"{cid}: {exc}; nothing was replayed") from None
    _fill_cache(bundle, chosen, ResponseCache(cache_dir))
    expected = {c["id"]: c for c in check.cells}
    report = ReplayReport(Path(path), out, [])
    for k, cid in enumerate(chosen, 1):  # progress per cell, on stderr (the report goes to stdout)
        print(f"replay: cell {k}/{len(chosen)} {cid} ...", file=sys.stderr, flush=True)
        report.cells.append(_replay_cell(bundle, cid, configs.get(cid), out / cid, work / "runs" / cid,
                                         expected.get(cid, {}), tolerance))
        done = report.cells[-1]
        print(f"replay: cell {k}/{len(chosen)} {cid}: {done.status} ({done.wall_s:.1f} s)", file=sys.stderr,
              flush=True)
    write_json(out / "replay_report.json", report.to_json())  # atomic: a link planted under --out is replaced
    return report


def _replay_cell(bundle: Bundle, cid: str, config: tuple[Any, list[str]] | None, target: Path, recorded: Path,
                 expect: dict[str, Any], tolerance: dict[str, Tolerance] | None) -> CellReplay:
    from bird.loop import search

    meta = bundle.cell(cid)
    expectation = expect.get("expect", "-")
    if not meta.get("replayable") or config is None:
        return CellReplay(cid, "not_replayable", "-", expectation, meta.get("why_not") or "")
    cfg, notes = config
    start = time.monotonic()
    try:
        search(cfg, target)
    except ReplayMissError as exc:
        detail = str(exc)
        if exc.request is not None:
            calls = bundle.transcript(cid)
            detail = closest_difference(calls, exc.provider, exc.model, exc.request,
                                        exc.request.context.get("iteration"))
        return CellReplay(cid, "request_mismatch", "-", expectation, detail, time.monotonic() - start,
                          config_notes=notes)
    except Exception as exc:  # noqa: BLE001 - one cell's failure is reported; the others still replay
        return CellReplay(cid, "failed", "-", expectation, f"{type(exc).__name__}: {exc}"[:2000],
                          time.monotonic() - start, config_notes=notes)
    wall = time.monotonic() - start
    try:
        comparison = compare_runs(read_run(recorded), read_run(target), tolerance)
    except (OSError, ValueError) as exc:  # a record of the bundle's run bird will not read (bird/files.py's rules)
        return CellReplay(cid, "failed", "-", expectation, f"not compared: {exc}"[:2000], wall, config_notes=notes)
    return replace(_verdict(cid, comparison, expectation, wall), config_notes=notes)


def _verdict(cid: str, comparison: Comparison, expectation: str, wall: float) -> CellReplay:
    """The cell's status against what its bundle expected; its differences listed beyond tolerance first (a file on
    one side only is beyond any tolerance), so that a cut list still shows what broke the expectation."""
    beyond = [f"only in the bundle: {p}" for p in comparison.only_recorded] + \
             [f"only in the replay: {p}" for p in comparison.only_replayed] + \
             [str(d) for d in comparison.differences if not d.within_tolerance]
    within = [str(d) for d in comparison.differences if d.within_tolerance]
    listed = beyond + within
    if comparison.identical:
        return CellReplay(cid, "identical", "bit-for-bit", expectation, "", wall)
    if expectation == "bit-for-bit":
        return CellReplay(cid, "differs", "bit-for-bit", expectation,
                          f"{len(listed)} difference(s) where bit-for-bit was expected", wall, listed)
    if comparison.within_tolerance:
        return CellReplay(cid, "within_tolerance", "within tolerance", expectation,
                          f"{len(listed)} number(s) differ within their tolerance", wall, listed)
    return CellReplay(cid, "differs", "within tolerance", expectation,
                      f"{len(beyond)} difference(s) beyond tolerance" + (f", {len(within)} within" if within else ""),
                      wall, listed)


def remove_work(out: Path) -> None:
    """Drop the extracted bundle copy under `out/.bundle` (the report and the replayed runs stay)."""
    shutil.rmtree(Path(out) / ".bundle", ignore_errors=True)
