"""Terminal progress during a search and the summary table at the end."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["ProgressDisplay", "print_summary", "summary_line"]


class ProgressDisplay:
    """One line per scored checkpoint (its steps and its score), and throttled lines of steps in between; quiet
    when disabled."""

    def __init__(self, enabled: bool, min_interval_s: float = 2.0) -> None:
        self.enabled = enabled
        self.console = Console(stderr=True, highlight=False)
        self.min_interval_s = min_interval_s
        self._last: dict[str, float] = {}
        self.iteration = ""

    def log(self, message: str) -> None:
        if self.enabled:
            self.console.print(message)

    def train_progress(self, cid: str, steps: int, total: int, score: float | None) -> None:
        """`score` is the checkpoint at `steps` (None: steps so far, no checkpoint scored there)."""
        now = time.monotonic()
        if score is None and now - self._last.get(cid, 0.0) < self.min_interval_s:
            return
        self._last[cid] = now
        shown = "" if score is None else f"  checkpoint score {score:.3f}"
        self.log(escape(f"  {self.iteration} {cid:>8}  {steps:>9,}/{total:,} steps{shown}"))


def summary_line(result: dict[str, Any]) -> str:
    """One line: how the search ended (and why, when not completed), the returned reward and its score, the cost."""
    rs = result.get("returned_score")
    ended = result.get("status") or "?"
    if result.get("status_reason"):
        ended += f" ({result['status_reason']})"
    tied = len(result.get("tied_iterations") or [])
    if tied:
        ended += f" · {tied} of {len(result.get('iterations') or [])} selections tied on fitness"
    return (f"{result['method']} on {result['env']} seed {result['seed']}: {ended} · returned "
            f"{(result.get('returned') or {}).get('candidate_id')} · returned_score {'n/a' if rs is None else f'{rs:.3f}'}"
            f" · env steps {result['env_steps']:,} · LLM calls {result['llm_calls']} · wall {result['wall_s']:.0f} s")


def print_summary(result: dict[str, Any], candidates: list[dict[str, Any]] | None) -> None:
    """The table of candidates (when given: run.progress) and the one-line summary, on stdout."""
    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    if candidates is not None:
        table = Table(title=f"{result['method']} on {result['env']} (seed {result['seed']}, budget {result['budget']})")
        for col in ("candidate", "status", "fitness", "score", "env steps"):
            table.add_column(col)
        for c in candidates:
            status = c["failure"]["kind"] if c["failure"] else c.get("status", "trained")
            fit = "—" if c["fitness"] is None else f"{c['fitness']:.3f}"
            score = "—" if c["score"] is None else f"{c['score']:.3f}"
            mark = " ←" if c["id"] == (result.get("returned") or {}).get("candidate_id") else ""
            table.add_row(escape(c["id"] + mark), status, fit, score, f"{c['env_steps']:,}")
        console.print(table)
    console.print(escape(summary_line(result)))
    accuracy = result.get("reward_accuracy")
    if accuracy:
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        console.print(escape(f"reward accuracy ({accuracy['metric']}, GRACE Figs 2 and 4) of {accuracy['returned']}: "
                             f"train {fmt(accuracy['train'])} · held-out {fmt(accuracy['test'])}"))
