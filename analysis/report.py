"""The leaderboard report: tables + figures from a run collection, written as Markdown, HTML and PNGs."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from bird.escape import markdown

from . import plots
from .artefacts import copy_clips, copy_run_files
from .bootstrap import FEW_SEEDS, few_seeds_label, interval
from .bradley_terry import DEFAULT_L2, BTIntervals, bradley_terry_intervals
from .clips import pick_clips, why_no_clips
from .metrics import aggregate_iqm, aggregate_optimality_gap
from .page import CAPTIONS, not_drawn_reason, render_page
from .rundir import RunCollection, read_runs
from .task_table import per_task_table
from .tidy import score_table, shared_tasks
from .transfer_table import TRANSFER_HEAD, TRANSFER_NOTE, transfer_rows, transfer_table

__all__ = ["Leaderboard", "build_leaderboard", "write_leaderboard"]

# a cell this module formats: numbers, an interval, a mark in parentheses (never text from a run directory)
_INTERVAL = re.compile(r"[-+0-9.e ]*\[[-+0-9.e, ]*\][a-z() ]*(?: \(\d+ seeds? < \d+: about the seeds' range\))?")


@dataclass
class Leaderboard:
    """Overview tables (benchmark name or "pooled" -> DataFrame), figures (file stem -> Figure or None), notes, the
    per-task table (analysis/task_table.py) and the runs behind it (RunCollection.runs)."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, object]
    notes: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    clips: pd.DataFrame = field(default_factory=pd.DataFrame)  # one clip per method × task (analysis/clips.py)
    tasks: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per benchmark × task × method
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    remarks: dict[str, list[str]] = field(default_factory=dict)  # table name -> what its reader must know (overlaps)
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis/transfer_table.py (generalisation)


def _fmt_iv(est: float, lo: float, hi: float) -> str:
    return f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def _bt_fits(runs: pd.DataFrame, n_resamples: int, l2: float, random_state: int,
             notes: list[str]) -> tuple[dict[str, BTIntervals], dict[str, int]]:
    fits, n_tasks = {}, {}
    groups = [(b, runs[runs["benchmark"] == b]) for b in sorted(runs["benchmark"].unique())]
    if len(groups) > 1:
        groups.append(("pooled", runs))
    for name, sub in groups:
        table = score_table(sub)
        if len(table) < 2:
            notes.append(f"{name}: Bradley–Terry needs two methods, found {sorted(table)}")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fits[name] = bradley_terry_intervals(table, l2=l2, n_resamples=n_resamples, random_state=random_state)
        n_tasks[name] = len(set().union(*table.values()))
    return fits, n_tasks


def _tied(g: pd.DataFrame) -> str:
    """How many of the runs' iterations ended with every ranked candidate tied on fitness (the tie rule picked), of
    the iterations of the runs that record it."""
    known = g[g["n_tied"].notna()] if "n_tied" in g else g.iloc[0:0]
    if known.empty:
        return "n/a (not recorded)"
    return f"{int(known['n_tied'].sum())} of {int(known['n_iterations'].sum())}"


def _few_seeds_remark(intervals: dict[str, tuple[float, float]], seeds: dict[str, int]) -> list[str]:
    """"too few seeds to separate methods" for the pairs whose mean intervals overlap where a cell has fewer than
    FEW_SEEDS seeds (empty otherwise)."""
    names = sorted(intervals)
    pairs = [f"{a} and {b}" for i, a in enumerate(names) for b in names[i + 1:]
             if min(seeds[a], seeds[b]) < FEW_SEEDS and intervals[a][0] <= intervals[b][1]
             and intervals[b][0] <= intervals[a][1]]
    if not pairs:
        return []
    return [f"Too few seeds to separate methods: {'; '.join(pairs)} (fewer than {FEW_SEEDS} seeds a cell, and their "
            "mean intervals overlap)."]


def _table(runs: pd.DataFrame, bench: str, fit: BTIntervals | None, n_resamples: int,
           random_state: int, notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """One overview table, and the remarks to print under it."""
    sub = runs if bench == "pooled" else runs[runs["benchmark"] == bench]
    table = score_table(sub)
    _, lacking = shared_tasks(table)
    rows, intervals, fewest = [], {}, {}
    for m in sorted(table):
        cells = table[m]
        g = sub[sub["method"] == m]
        lo, hi = min(map(len, cells.values())), max(map(len, cells.values()))
        fewest[m] = lo
        row = {"method": m, "tasks": len(cells), "seeds": f"{lo}" if lo == hi else f"{lo}–{hi}"}
        if m in lacking:
            row["mean [95% BCa]"] = "n/a (lacks tasks)"
            notes.append(f"{bench}: {m} lacks tasks {lacking[m]}; no aggregate over a different task set")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                iv = interval(cells, "BCa", n_resamples=n_resamples, random_state=random_state)
            row["mean [95% BCa]"] = _fmt_iv(iv.estimate, iv.low, iv.high) + (" (degenerate)" if iv.degenerate
                                                                              else few_seeds_label(lo))
            intervals[m] = (iv.low, iv.high)
        row["IQM"] = f"{aggregate_iqm(cells):.3f}"
        row["opt. gap"] = f"{aggregate_optimality_gap(cells):.3f}"
        if fit is not None:
            row["Elo [95% " + fit.method + "]"] = fit.describe(m) + (few_seeds_label(lo) * fit.identifiable)
        row["selections tied"] = _tied(g)
        row["env steps / run"] = f"{g['env_steps'].mean():.3g}"
        row["LLM calls / run"] = f"{g['llm_calls'].mean():.3g}"
        row["cost USD (total)"] = f"{g['cost_usd'].sum():.2f}"
        rows.append(row)
    return pd.DataFrame(rows), _few_seeds_remark(intervals, fewest)


def _default_pair(runs: pd.DataFrame, fits: dict[str, BTIntervals]) -> tuple[str, str] | None:
    methods = sorted(runs["method"].unique())
    if len(methods) < 2:
        return None
    fit = fits.get("pooled") or next(iter(fits.values()), None)
    order = sorted(fit.ratings, key=fit.ratings.get, reverse=True) if fit else methods
    return order[0], order[1]


def build_leaderboard(source: RunCollection | Iterable[str | os.PathLike] | str | os.PathLike,
                      pair: tuple[str, str] | None = None, n_resamples: int = 10_000, bt_resamples: int = 1_000,
                      curve_resamples: int = 2_000, l2: float = DEFAULT_L2, random_state: int = 0,
                      figures: bool = True) -> Leaderboard:
    """Compute the leaderboard tables and the figures.

    Args:
        source: a RunCollection, or run directories / sweep folders.
        pair: (a, b) for the paired-difference figure; default: the two highest-rated methods.
        n_resamples / bt_resamples / curve_resamples: bootstrap sizes for means, Elo and curves.
        l2: the Bradley–Terry penalty (default: the prior of analysis.bradley_terry.DEFAULT_PRIOR_SD_ELO).
        figures: draw the figures (False: tables and notes only).
    Returns:
        Leaderboard.
    """
    coll = source if isinstance(source, RunCollection) else read_runs(source)
    runs, notes = coll.runs, []
    n_methods = runs["method"].nunique() if len(runs) else 0
    n_tasks = runs.groupby(["benchmark", "task"]).ngroups if len(runs) else 0
    header = [f"{len(runs)} run{'s' * (len(runs) != 1)}; {n_methods} method{'s' * (n_methods != 1)}; "
              f"{n_tasks} task{'s' * (n_tasks != 1)}."]
    if len(runs):
        header.append("Generators: " + "; ".join(sorted({str(g) for g in runs["generator"].fillna("unknown")})))
    no_score = int(runs["returned_score"].isna().sum()) if len(runs) else 0
    if no_score:
        header.append(f"{no_score} completed runs returned no reward (returned_score null); they are left out "
                      "of every score statistic below.")
    if coll.skipped:
        header.append(f"Skipped {len(coll.skipped)} run directories (not counted): " + "; ".join(
            f"`{s.path}`: {s.reason}" for s in coll.skipped))
    if runs.empty:
        return Leaderboard({}, {}, ["no completed runs: nothing to report"], header)
    fits, n_tasks = _bt_fits(runs, bt_resamples, l2, random_state, notes)
    benches = sorted(runs["benchmark"].unique())
    built = {b: _table(runs, b, fits.get(b), n_resamples, random_state, notes)
             for b in [*benches, *["pooled"] * (len(benches) > 1)]}
    tables = {name: df for name, (df, _) in built.items()}
    remarks = {name: said for name, (_, said) in built.items() if said}
    clips = pick_clips(runs)
    if clips.empty:
        notes.append(f"clips: none to show: {why_no_clips(runs)}")
    tasks = per_task_table(runs, n_resamples, random_state)
    transfer = transfer_table(coll.transfer, runs, n_resamples, random_state)
    if not figures:
        return Leaderboard(tables, {}, notes, header, clips, tasks, runs, remarks, transfer)
    figs: dict[str, object] = {}

    def add(name: str, result: plots.Result) -> None:
        figs[name] = result[0]
        notes.extend(f"{name}: {n}" for n in result[1])

    add("method_comparison", plots.plot_method_comparison(runs, n_resamples, random_state))
    add("bradley_terry", plots.plot_bradley_terry(fits, n_tasks, l2))
    add("curves_iteration", plots.plot_curves(coll.iterations, "iteration", curve_resamples, random_state))
    add("curves_env_steps", plots.plot_curves(coll.iterations, "env_steps_cum", curve_resamples, random_state))
    add("epic", plots.plot_epic(coll.epic, curve_resamples, random_state))
    pair = pair or _default_pair(runs, fits)
    if pair is None:
        add("paired", (None, ["one method only: no paired differences"]))
    else:
        add("paired", plots.plot_paired(runs, *pair, n_resamples=n_resamples, random_state=random_state))
    add("profiles", plots.plot_profiles(runs))
    return Leaderboard(tables, figs, notes, header, clips, tasks, runs, remarks, transfer)


def _md_table(df: pd.DataFrame) -> str:
    """A Markdown table; every cell escaped (bird/escape.py: method and task names come from run directories)."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.to_numpy()]
    return "\n".join(lines)


def _cell(value: object) -> str:
    """A table cell: a name escaped for Markdown, our intervals (`0.5 [0.4, 0.6]`) kept readable."""
    text = str(value)
    return text if _INTERVAL.fullmatch(text) else markdown(text)


def _task_md(tasks: pd.DataFrame) -> list[str]:
    if tasks.empty:
        return []
    rows = pd.DataFrame({
        "task": tasks["benchmark"] + "/" + tasks["task"], "method": tasks["method"], "seeds": tasks["n_seeds"],
        "mean [95% BCa]": [f"{t.mean:.3f} [{t.low:.3f}, {t.high:.3f}]{'' if t.degenerate else few_seeds_label(t.n_seeds)}"
                           if t.n_seeds else "n/a" for t in tasks.itertuples()]})
    return ["## Per task", "", _md_table(rows), ""]


def _transfer_md(transfer: pd.DataFrame) -> list[str]:
    if transfer.empty:
        return []
    rows = pd.DataFrame(transfer_rows(transfer), columns=TRANSFER_HEAD)
    return ["## Generalisation", "", TRANSFER_NOTE, "", _md_table(rows), ""]


def _clips_md(clips: pd.DataFrame, files: dict[tuple[str, str, str], str]) -> list[str]:
    if clips.empty:
        return []
    md = ["## Clips", "", "One clip per method × task: the first evaluation episode of the returned policy (final "
          "retrain) of the run with the median returned score.", ""]
    for r in clips.sort_values(["benchmark", "task", "method"]).itertuples():
        path = files[(r.benchmark, r.task, r.method)]
        score = "n/a" if pd.isna(r.returned_score) else f"{r.returned_score:.3f}"
        clip = "n/a" if r.clip_score is None or pd.isna(r.clip_score) else f"{r.clip_score:.3f}"
        md.append(f"- {markdown(r.benchmark)}/{markdown(r.task)}, {markdown(r.method)}: [{markdown(path)}]({quote(path)}) "
                  f"— returned score {score} (seed {r.seed}, median of {r.n_runs} runs); this episode {clip}")
    return [*md, ""]


def write_leaderboard(lb: Leaderboard, out_dir: str | os.PathLike, dpi: int = 200, bundle: str | None = None) -> Path:
    """Write leaderboard.md, leaderboard.html, one PNG per drawable figure, the clips (clips/) and each run's result,
    config and returned reward (runs/) into `out_dir`; returns the .md path.

    Args:
        dpi: of the PNGs; the page shows each figure 100 CSS px per inch wide, so 200 is sharp on high-DPI screens.
        bundle: the bundle (file name or path) the runs came from, named in the page's re-run box.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# bird leaderboard", "", *[f"- {markdown(h)}" for h in lb.header], ""]
    for name, df in lb.tables.items():
        md += [f"## {markdown(name)}", "", _md_table(df), ""]
        md += [*[f"**{markdown(r)}**" for r in lb.remarks.get(name, [])], ""] if lb.remarks.get(name) else []
    md += ["Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set fixed.", ""]
    md += _task_md(lb.tasks)
    md += _transfer_md(lb.transfer)
    md += ["## Figures", ""]
    saved: dict[str, tuple[str, int] | None] = {}
    for name, fig in lb.figures.items():
        caption = CAPTIONS.get(name, name)
        if fig is None:
            md += [f"### {caption}", "", f"_Not drawn: {markdown(not_drawn_reason(name, lb.notes))}_", ""]
            saved[name] = None
            continue
        fig.savefig(out / f"{name}.png", dpi=dpi)
        md += [f"### {caption}", "", f"![{caption}]({name}.png)", ""]
        saved[name] = (f"{name}.png", round(fig.get_figwidth() * 100))
    clip_files = copy_clips(lb.clips, out)
    md += _clips_md(lb.clips, clip_files)
    if lb.notes:
        md += ["## Notes", "", *[f"- {markdown(n)}" for n in lb.notes], ""]
    (out / "leaderboard.md").write_text("\n".join(md))
    run_files = copy_run_files(lb.runs, out) if len(lb.runs) else {}
    (out / "leaderboard.html").write_text(render_page(lb, saved, clip_files, run_files, bundle))
    return out / "leaderboard.md"
