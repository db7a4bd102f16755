"""Terminal progress during a search and the summary table at the end."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["ProgressDisplay", "print_summary"]


class ProgressDisplay:
    """One line per candidate update, throttled; quiet when disabled."""

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
        now = time.monotonic()
        if steps < total and now - self._last.get(cid, 0.0) < self.min_interval_s:
            return
        self._last[cid] = now
        shown = "—" if score is None else f"{score:.3f}"
        self.log(escape(f"  {self.iteration} {cid:>8}  {steps:>9,}/{total:,} steps  score {shown}"))


def print_summary(result: dict[str, Any], candidates: list[dict[str, Any]]) -> None:
    console = Console(file=sys.stdout, highlight=False)
    table = Table(title=f"{result['method']} on {result['env']} (seed {result['seed']}, budget {result['budget']})")
    for col in ("candidate", "status", "fitness", "score", "env steps"):
        table.add_column(col)
    for c in candidates:
        status = c["failure"]["kind"] if c["failure"] else "trained"
        fit = "—" if c["fitness"] is None else f"{c['fitness']:.3f}"
        score = "—" if c["score"] is None else f"{c['score']:.3f}"
        mark = " ←" if c["id"] == (result.get("returned") or {}).get("candidate_id") else ""
        table.add_row(c["id"] + mark, status, fit, score, f"{c['env_steps']:,}")
    console.print(table)
    rs = result.get("returned_score")
    console.print(f"returned {(result.get('returned') or {}).get('candidate_id')} · returned_score "
                  f"{'n/a' if rs is None else f'{rs:.3f}'} · env steps {result['env_steps']:,} · "
                  f"LLM calls {result['llm_calls']} · wall {result['wall_s']:.0f} s")
    accuracy = result.get("reward_accuracy")
    if accuracy:
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        console.print(f"reward accuracy ({accuracy['metric']}, GRACE Figs 2 and 4) of {accuracy['returned']}: "
                      f"train {fmt(accuracy['train'])} · held-out {fmt(accuracy['test'])}")
