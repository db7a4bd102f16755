"""The leaderboard report: tables + figures from a run collection, written as Markdown, HTML and PNGs."""

from __future__ import annotations

import html
import os
import shutil
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import plots
from .bootstrap import interval
from .bradley_terry import BTIntervals, bradley_terry_intervals
from .clips import pick_clips
from .metrics import aggregate_iqm, aggregate_optimality_gap
from .rundir import RunCollection, read_runs
from .tidy import score_table, shared_tasks

__all__ = ["Leaderboard", "build_leaderboard", "write_leaderboard"]


@dataclass
class Leaderboard:
    """Tables (benchmark name or "pooled" -> DataFrame), figures (file stem -> Figure or None), and notes."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, object]
    notes: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    clips: pd.DataFrame = field(default_factory=pd.DataFrame)  # one clip per method × task (analysis/clips.py)


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


def _table(runs: pd.DataFrame, bench: str, fit: BTIntervals | None, n_resamples: int,
           random_state: int, notes: list[str]) -> pd.DataFrame:
    sub = runs if bench == "pooled" else runs[runs["benchmark"] == bench]
    table = score_table(sub)
    _, lacking = shared_tasks(table)
    rows = []
    for m in sorted(table):
        cells = table[m]
        g = sub[sub["method"] == m]
        lo, hi = min(map(len, cells.values())), max(map(len, cells.values()))
        row = {"method": m, "tasks": len(cells), "seeds": f"{lo}" if lo == hi else f"{lo}–{hi}"}
        if m in lacking:
            row["mean [95% BCa]"] = "n/a (lacks tasks)"
            notes.append(f"{bench}: {m} lacks tasks {lacking[m]}; no aggregate over a different task set")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                iv = interval(cells, "BCa", n_resamples=n_resamples, random_state=random_state)
            row["mean [95% BCa]"] = _fmt_iv(iv.estimate, iv.low, iv.high) + (" (degenerate)" * iv.degenerate)
        row["IQM"] = f"{aggregate_iqm(cells):.3f}"
        row["opt. gap"] = f"{aggregate_optimality_gap(cells):.3f}"
        if fit is not None:
            mark = "" if fit.ratings.strongly_connected else " (not identifiable)"
            row["Elo [95% " + fit.method + "]"] = (f"{fit.ratings[m]:.0f} [{fit.low[m]:.0f}, {fit.high[m]:.0f}]"
                                                  + mark)
        row["env steps / run"] = f"{g['env_steps'].mean():.3g}"
        row["LLM calls / run"] = f"{g['llm_calls'].mean():.3g}"
        row["cost USD (total)"] = f"{g['cost_usd'].sum():.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _default_pair(runs: pd.DataFrame, fits: dict[str, BTIntervals]) -> tuple[str, str] | None:
    methods = sorted(runs["method"].unique())
    if len(methods) < 2:
        return None
    fit = fits.get("pooled") or next(iter(fits.values()), None)
    order = sorted(fit.ratings, key=fit.ratings.get, reverse=True) if fit else methods
    return order[0], order[1]


def build_leaderboard(source: RunCollection | Iterable[str | os.PathLike] | str | os.PathLike,
                      pair: tuple[str, str] | None = None, n_resamples: int = 10_000, bt_resamples: int = 1_000,
                      curve_resamples: int = 2_000, l2: float = 1e-6, random_state: int = 0,
                      figures: bool = True) -> Leaderboard:
    """Compute the leaderboard tables and the figures.

    Args:
        source: a RunCollection, or run directories / sweep folders.
        pair: (a, b) for the paired-difference figure; default: the two highest-rated methods.
        n_resamples / bt_resamples / curve_resamples: bootstrap sizes for means, Elo and curves.
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
    tables = {b: _table(runs, b, fits.get(b), n_resamples, random_state, notes) for b in benches}
    if len(benches) > 1:
        tables["pooled"] = _table(runs, "pooled", fits.get("pooled"), n_resamples, random_state, notes)
    clips = pick_clips(runs)
    if not figures:
        return Leaderboard(tables, {}, notes, header, clips)
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
    return Leaderboard(tables, figs, notes, header, clips)


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in df.to_numpy()]
    return "\n".join(lines)


_CAPTIONS = {
    "method_comparison": "Method comparison per benchmark (dots: runs; ticks: mean; bars: 95% BCa)",
    "bradley_terry": "Bradley–Terry ratings (Elo) per benchmark and pooled",
    "curves_iteration": "Per-task curves over iterations",
    "curves_env_steps": "Per-task curves over cumulative env steps",
    "epic": "EPIC distance to the reference reward over iterations",
    "paired": "Paired differences (task, seed)",
    "profiles": "Performance profiles",
}


def _clips_section(clips: pd.DataFrame, out: Path) -> tuple[list[str], list[str]]:
    """Copy each method × task clip into out/clips/ and lay them out as a task × method grid (HTML) / list (md)."""
    if clips.empty:
        return [], []
    (out / "clips").mkdir(exist_ok=True)
    md = ["## Clips", "", "One clip per method × task: the first evaluation episode of the returned policy (final "
          "retrain) of the run with the median returned score.", ""]
    body = ["<h2>Clips</h2>", "<p>One clip per method × task: the first evaluation episode of the returned policy "
            "(final retrain) of the run with the median returned score.</p>"]
    for bench, g in clips.groupby("benchmark", sort=True):
        methods = sorted(g["method"].unique())
        body += [f"<h3>{html.escape(str(bench))}</h3>", "<table><tr><th>task</th>",
                 *[f"<th>{html.escape(m)}</th>" for m in methods], "</tr>"]
        for task, tg in g.groupby("task", sort=True):
            body.append(f"<tr><td>{html.escape(str(task))}</td>")
            for m in methods:
                row = tg[tg["method"] == m]
                if row.empty:
                    body.append("<td>–</td>")
                    continue
                r = row.iloc[0]
                name = f"{bench}-{task}-{m}.mp4".replace("/", "_")
                shutil.copy2(r["path"], out / "clips" / name)
                score = "n/a" if pd.isna(r["returned_score"]) else f"{r['returned_score']:.3f}"
                clip = "n/a" if r["clip_score"] is None or pd.isna(r["clip_score"]) else f"{r['clip_score']:.3f}"
                caption = (f"returned score {score} (seed {r['seed']}, median of {r['n_runs']} runs); "
                           f"this episode {clip}")
                body.append(f'<td><figure><video src="clips/{html.escape(name)}" controls muted loop playsinline '
                            f'preload="metadata" title="{html.escape(str(r["description"]))}"></video>'
                            f"<figcaption>{html.escape(caption)}</figcaption></figure></td>")
                md.append(f"- {bench}/{task}, {m}: [clips/{name}](clips/{name}) — {caption}")
            body.append("</tr>")
        body.append("</table>")
    return md + [""], body


def write_leaderboard(lb: Leaderboard, out_dir: str | os.PathLike, dpi: int = 110) -> Path:
    """Write leaderboard.md, leaderboard.html and one PNG per drawable figure into `out_dir`; returns the .md."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# bird leaderboard", "", *[f"- {h}" for h in lb.header], ""]
    body = ["<h1>bird leaderboard</h1>", "<ul>", *[f"<li>{html.escape(h)}</li>" for h in lb.header], "</ul>"]
    for name, df in lb.tables.items():
        md += [f"## {name}", "", _md_table(df), ""]
        body += [f"<h2>{html.escape(name)}</h2>", df.to_html(index=False, escape=True, border=0)]
    md += ["Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set fixed.", ""]
    md += ["## Figures", ""]
    body += ["<h2>Figures</h2>"]
    for name, fig in lb.figures.items():
        caption = _CAPTIONS.get(name, name)
        if fig is None:
            reason = "; ".join(n.split(": ", 1)[1] for n in lb.notes if n.startswith(name + ": ")) or "no data"
            md += [f"### {caption}", "", f"_Not drawn: {reason}_", ""]
            body += [f"<h3>{html.escape(caption)}</h3>", f"<p><em>Not drawn: {html.escape(reason)}</em></p>"]
            continue
        fig.savefig(out / f"{name}.png", dpi=dpi)
        md += [f"### {caption}", "", f"![{caption}]({name}.png)", ""]
        body += [f"<h3>{html.escape(caption)}</h3>", f'<img src="{name}.png" alt="{html.escape(caption)}">']
    clip_md, clip_html = _clips_section(lb.clips, out)
    md += clip_md
    body += clip_html
    if lb.notes:
        md += ["## Notes", "", *[f"- {n}" for n in lb.notes], ""]
        body += ["<h2>Notes</h2>", "<ul>", *[f"<li>{html.escape(n)}</li>" for n in lb.notes], "</ul>"]
    (out / "leaderboard.md").write_text("\n".join(md))
    style = "body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}" \
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd}img{max-width:100%}" \
            "figure{margin:0}video{width:240px;display:block}figcaption{font-size:12px;color:#444}"
    (out / "leaderboard.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>bird leaderboard</title><style>{style}</style>"
        f"</head><body>{''.join(body)}</body></html>\n")
    return out / "leaderboard.md"
