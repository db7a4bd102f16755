"""leaderboard.html: one static page (no server, no CDN; it works from file://) with a sortable overview table per
benchmark, a sortable per-task table with intervals and the clips playing next to their scores, the figures, links
to each run's copied files, and how to re-run the comparison from its bundle. Script and style: leaderboard.js/.css."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .bootstrap import few_seeds_label
from .transfer_table import TRANSFER_HEAD, TRANSFER_NOTE, transfer_rows

__all__ = ["CAPTIONS", "not_drawn_reason", "render_page"]

_ASSETS = Path(__file__).parent
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")
_WITH_INTERVAL = re.compile(r"^(\S+) (\[[^\]]*\])(.*)$")
CAPTIONS = {
    "method_comparison": "Method comparison per benchmark (dots: runs; ticks: mean; bars: 95% BCa)",
    "bradley_terry": "Bradley–Terry ratings (Elo) per benchmark and pooled",
    "curves_iteration": "Per-task curves over iterations",
    "curves_env_steps": "Per-task curves over cumulative env steps",
    "epic": "EPIC distance to the reference reward over iterations",
    "paired": "Paired differences (task, seed)",
    "profiles": "Performance profiles",
}
RunFiles = dict[tuple[str, str, str, int], dict[str, str]]


def not_drawn_reason(name: str, notes: list[str]) -> str:
    """Why figure `name` was not drawn: its notes ("<name>: <reason>") joined, or "no data"."""
    return "; ".join(n.split(": ", 1)[1] for n in notes if n.startswith(name + ": ")) or "no data"


def _e(text: object) -> str:
    return html.escape(str(text))


def _num_cell(text: object, sort: float | str | None = None) -> str:
    """A right-aligned cell sorted by `sort` (default: the number the text starts with; none: sorts last); an
    interval in brackets is set in a lighter type."""
    text = str(text)
    if sort is None:
        m = _NUMBER.match(text)
        sort = m.group(0) if m else ""
    elif isinstance(sort, float) and pd.isna(sort):
        sort = ""
    m = _WITH_INTERVAL.match(text)
    shown = f'{_e(m[1])} <span class="ci">{_e(m[2])}</span>{_e(m[3])}' if m else _e(text)
    return f'<td class="num" data-sort="{_e(sort)}">{shown}</td>'


def _table(head: list[str], rows: Iterable[list[str]], nosort: Iterable[str] = ()) -> str:
    """A table.sortable: `head` names the columns, each row is a list of rendered <td> cells."""
    ths = "".join(f"<th{' data-nosort' if h in set(nosort) else ''}>{_e(h)}</th>" for h in head)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return f'<table class="sortable"><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>'


def _files(links: dict[str, str]) -> str:
    return " ".join(f'<a href="{_e(path)}">{_e(label)}</a>' for label, path in links.items()) or "(no files)"


def _runs_cell(runs: pd.DataFrame, files: RunFiles, with_task: bool) -> str:
    """<details> listing each run (task, seed) with links to its copied files."""
    lines = []
    for r in runs.sort_values(["benchmark", "task", "seed"]).itertuples():
        where = f"{r.task} · " if with_task else ""
        lines.append(f"<div>{_e(where)}seed {int(r.seed)}: "
                     f"{_files(files.get((r.benchmark, r.task, r.method, int(r.seed)), {}))}</div>")
    n = len(lines)
    return (f'<td class="files"><details><summary>{n} run{"s" * (n != 1)}</summary>{"".join(lines)}'
            "</details></td>")


def _overview(name: str, df: pd.DataFrame, runs: pd.DataFrame, files: RunFiles, remarks: list[str]) -> str:
    """One benchmark's (or the pooled) overview table, with a column of run links when the runs are known, and the
    remarks its reader must know (methods too few seeds separate)."""
    mine = runs if name == "pooled" else runs[runs["benchmark"] == name]
    head = [*map(str, df.columns), *["runs"] * bool(len(runs))]
    rows = []
    for rec in df.to_dict("records"):
        cells = [f"<td>{_e(v)}</td>" if c == "method" else _num_cell(v) for c, v in rec.items()]
        if len(runs):
            cells.append(_runs_cell(mine[mine["method"] == rec.get("method")], files, with_task=True))
        rows.append(cells)
    said = "".join(f'<p class="remark">{_e(r)}</p>' for r in remarks)
    return f'<h3 id="overview-{_e(name)}">{_e(name)}</h3>' + _table(head, rows, nosort=["runs"]) + said


def _clip_cell(clip: dict | None, path: str | None) -> str:
    if clip is None or path is None:
        return '<td class="clip">–</td>'
    episode = "n/a" if clip["clip_score"] is None or pd.isna(clip["clip_score"]) else f"{clip['clip_score']:.3f}"
    returned = clip["returned_score"]
    run_score = "n/a" if returned is None or pd.isna(returned) else f"{returned:.3f}"
    caption = (f"seed {clip['seed']}, returned score {run_score} (the median of {clip['n_runs']} "
               f"run{'s' * (clip['n_runs'] != 1)}); this episode {episode}")
    return (f'<td class="clip"><video src="{_e(path)}" title="{_e(clip["description"])}" controls muted loop '
            f'playsinline preload="metadata"></video><div class="cap">{_e(caption)}</div></td>')


def _task_table(bench: str, tasks: pd.DataFrame, runs: pd.DataFrame, clips: pd.DataFrame,
                clip_files: dict[tuple[str, str, str], str], files: RunFiles) -> str:
    by_key = {(c["benchmark"], c["task"], c["method"]): c for c in clips.to_dict("records")} if len(clips) else {}
    head = ["task", "method", "seeds", "mean [95% BCa]", "clip", "min", "max", "runs"]
    rows = []
    for t in tasks[tasks["benchmark"] == bench].to_dict("records"):
        key = (t["benchmark"], t["task"], t["method"])
        if t["n_seeds"]:
            mean = f"{t['mean']:.3f} [{t['low']:.3f}, {t['high']:.3f}]" + (" (degenerate)" if t["degenerate"]
                                                                           else few_seeds_label(t["n_seeds"]))
            lo, hi = f"{t['min']:.3f}", f"{t['max']:.3f}"
        else:
            mean, lo, hi = "n/a (no returned score)", "–", "–"
        seeds = f"{t['n_seeds']}" + (f" of {t['n_runs']}" if t["n_runs"] != t["n_seeds"] else "")
        mine = runs[(runs["benchmark"] == bench) & (runs["task"] == t["task"]) & (runs["method"] == t["method"])]
        rows.append([f"<td>{_e(t['task'])}</td>", f"<td>{_e(t['method'])}</td>", _num_cell(seeds, t["n_seeds"]),
                     _num_cell(mean, t["mean"]), _clip_cell(by_key.get(key), clip_files.get(key)),
                     _num_cell(lo, t["min"]), _num_cell(hi, t["max"]), _runs_cell(mine, files, with_task=False)])
    return f'<h3 id="tasks-{_e(bench)}">{_e(bench)}</h3>' + _table(head, rows, nosort=["clip", "runs"])


def _transfer_section(lb: object) -> list[str]:
    """The generalisation table (analysis/transfer_table.py), when some run evaluated its policy on unseen tasks."""
    transfer = getattr(lb, "transfer", None)
    if transfer is None or transfer.empty:
        return []
    rows = [[f"<td>{_e(m)}</td>", f"<td>{_e(src)}</td>", f"<td>{_e(task)}</td>", _num_cell(n), _num_cell(mean, t.mean)]
            for (m, src, task, n, mean), t in zip(transfer_rows(transfer), transfer.itertuples(), strict=True)]
    return ['<section id="generalisation"><h2>Generalisation</h2>', f'<p class="hint">{_e(TRANSFER_NOTE)}</p>',
            _table(TRANSFER_HEAD, rows), "</section>"]


def _figures(figures: dict[str, tuple[str, int] | None], notes: list[str]) -> list[str]:
    """Each drawn figure once, titled by its own image (the caption is its alt text); the others say why not."""
    body = []
    for name, saved in figures.items():
        caption = CAPTIONS.get(name, name)
        if saved is None:
            reason = not_drawn_reason(name, notes)
            body.append(f'<p class="missing" id="fig-{_e(name)}">{_e(caption)}: not drawn ({_e(reason)}).</p>')
        else:
            file, width = saved
            body.append(f'<figure id="fig-{_e(name)}"><img src="{_e(file)}" width="{width}" alt="{_e(caption)}">'
                        "</figure>")
    return body


def _rerun(bundle: str | None) -> str:
    """The box that says how to re-run the comparison from its bundle (`python -m bird.bundle`, docs/bundles.md)."""
    if bundle:
        name = _e(Path(bundle).name)
        intro = (f"Built from the bundle <code>{name}</code>. Rebuild this page from its recorded results, or re-run "
                 "every cell: the recorded LLM answers are replayed, so no API key and no network are needed.")
        cmds = (f"python -m bird.analysis leaderboard {name} --out OUT\n"
                f"python -m bird.bundle replay {name} --out DIR\npython -m bird.analysis leaderboard DIR --out OUT")
    else:
        intro = ("Built from run directories. Pack them into a bundle to publish the comparison; anyone can then "
                 "re-run every cell from it with no API key and no network (the recorded LLM answers are replayed).")
        cmds = ("python -m bird.bundle pack RUNS... --out NAME.bird\npython -m bird.bundle replay NAME.bird --out DIR\n"
                "python -m bird.analysis leaderboard DIR --out OUT")
    return (f'<section class="rerun" id="rerun"><h2>Re-run this comparison</h2><p>{intro}</p>'
            f"<pre>{cmds}</pre></section>")


def render_page(lb: object, figures: dict[str, tuple[str, int] | None], clip_files: dict[tuple[str, str, str], str],
                run_files: RunFiles, bundle: str | None = None) -> str:
    """The whole leaderboard.html.

    Args:
        lb: the Leaderboard (analysis/report.py).
        figures: figure name -> (PNG file, display width in CSS px), or None when it was not drawn.
        clip_files / run_files: what analysis/artefacts.py copied, as paths relative to the page.
        bundle: the bundle's file name or path when the leaderboard was built from one.
    """
    runs = lb.runs if len(lb.runs) else pd.DataFrame(columns=["benchmark", "task", "method", "seed"])
    tasks = lb.tasks
    body = ["<main><h1>bird leaderboard</h1>", '<ul class="summary">',
            *[f"<li>{_e(h)}</li>" for h in lb.header], "</ul>",
            '<nav><a href="#overview">Overview</a><a href="#tasks">Per task</a><a href="#figures">Figures</a>'
            '<a href="#notes">Notes</a><a href="#rerun">Re-run</a></nav>', _rerun(bundle),
            '<section id="overview"><h2>Overview</h2><p class="hint">Click a column heading to sort by it; click '
            "again to reverse. Intervals: 95% BCa (scipy.stats.bootstrap), seeds resampled within tasks, task set "
            "fixed.</p>"]
    body += [_overview(name, df, runs, run_files, lb.remarks.get(name, [])) for name, df in lb.tables.items()]
    body.append("</section>")
    if len(tasks):
        body.append('<section id="tasks"><h2>Per task</h2><p class="hint">Mean returned score over seeds with its '
                    "95% BCa interval (seeds resampled). Sorting is stable: sort by the mean, then by task, to rank "
                    "the methods within each task. Each clip is the first evaluation episode of the returned policy "
                    "of the run with the median returned score.</p>")
        body += [f'<p class="remark">Clips: {_e(n.split(": ", 1)[1])}.</p>' for n in lb.notes
                 if n.startswith("clips: ")]
        body += [_task_table(b, tasks, runs, lb.clips, clip_files, run_files) for b in sorted(tasks["benchmark"].unique())]
        body.append("</section>")
    body += _transfer_section(lb)
    body += ['<section id="figures"><h2>Figures</h2>', *_figures(figures, lb.notes), "</section>"]
    if lb.notes:
        body += ['<section id="notes"><h2>Notes</h2><ul>', *[f"<li>{_e(n)}</li>" for n in lb.notes], "</ul></section>"]
    body.append("</main>")
    style, script = (_ASSETS / "leaderboard.css").read_text(), (_ASSETS / "leaderboard.js").read_text()
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'><title>bird leaderboard</title>"
            f"<style>{style}</style></head><body>{''.join(body)}<script>{script}</script></body></html>\n")
