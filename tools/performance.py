"""docs/performance.md and the README's table of current ratios, generated from the rows in bench/results/*.csv.

    python tools/performance.py            # rewrite docs/performance.md and the README's block
    python tools/performance.py --check    # exit 1 naming what is out of step (tests/docs/test_performance.py)

Each results file becomes one section: what the bench measures (the first paragraph of bench/bench_<name>.py's
docstring, or ABOUT for logs without a script) and its rows, oldest first. Commits stay in the files (a data column),
never on the page.
"""

from __future__ import annotations

import argparse
import ast
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- performance:begin (tools/performance.py) -->", "<!-- performance:end -->"

# results file -> (what its `ratio` column divides, what the ratio aims at, the column naming the case)
HEADLINES: dict[str, tuple[str, str, str]] = {
    "overhead": ("bird's training / raw SB3 PPO, wall", "≤ 1.05", "env"),
    "jax": ("bird's jax_ppo, K candidates in one program / raw Brax PPO, env steps per s", "≥ 0.8", "task"),
    "executor": ("Ray tasks / local pool, one smoke search", "≤ 1.15", "env"),
    "warm_pool": ("warm / fresh training workers, one smoke search", "< 1", "env"),
    "pool_start": ("forked / spawned workers, a command-line search, wall", "< 1", "workers"),
    "trainer_start": ("JAX trainer set-up from stored executables / tracing", "< 1", "task"),
    "metaworld_env": ("bird's Meta-World env / Meta-World's own make, CPU", "< 1", "task"),
    "bundle": ("bundle replay / the recording, a 2 × 2 smoke sweep", "≈ 1", ""),
    "babyai_ppo": ("bird's sb3_ppo (grid CNN, sandboxed reward) / SB3's own PPO on the env's reward, env steps per s",
                   "", "level"),
    "video": ("a smoke search filming the returned policy / not filming", "", "env"),
    "isolation": ("reward worker start-up, every layer / without the newer ones", "", "language"),
}
# logs without a bench script: what they hold
ABOUT = {
    "suite_time": "The test suite's wall time: `make test` (or the whole `.ci/run`, with its second stage as root "
                  "from a 0700 directory), on clean clones, with the outcome.",
    "suite_cpu": "Where the suite's CPU goes: kernel process accounting (`tools/suite_acct.py`), the per-test plugin "
                 "(`tools/suite_cpu.py`) and `/proc/stat` around whole commands, by scope and part.",
    "experiments": "One-off A/B measurements behind a setting (a pinned version, a lazy import, a cache floor): "
                   "what was compared, the command, both values.",
    "search_time": "Whole searches timed as a user runs them (`python bench/bench_quickstart.py --search OVERRIDES`): "
                   "wall time, and the CPU of every process the search started.",
    "searches": "Whole searches with the offline generator: what a configuration returns at a budget, with its cost.",
    "catalogue_smoke": "`make catalogue`: one smoke search per task of the catalogue (envs/catalogue_smoke.py), whether "
                       "it passed, its returned score and wall time; docs/tasks.md shows each task's last row.",
    "bird_random_anchors": "BIRD's random-policy anchors of its Gym MuJoCo tasks, re-measured under bird's stack beside "
                           "BIRD's values (`bench/bench_bird_anchors.py`; docs/bird_gym_tasks.md).",
    "brax_backends": "Brax's physics backends, raw env steps per second (random actions): how `env.backend`'s "
                     "defaults were chosen.",
}
HIDDEN = ("machine", "load_end", "command")  # shown once per section (machine, command) or not at all


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), sorted(reader, key=lambda r: r["date"])


def _script(stem: str, rows: list[dict[str, str]]) -> Path | None:
    """The bench script of a results file: bench/bench_<stem>.py, else the one its rows' commands name."""
    named = [ROOT / "bench" / f"bench_{stem}.py"]
    named += [ROOT / m.group(1) for r in rows if (m := re.search(r"(bench/bench_\w+\.py)", r.get("command", "")))]
    return next((p for p in named if p.exists()), None)


def _about(stem: str, rows: list[dict[str, str]]) -> str:
    script = _script(stem, rows)
    if script is not None:
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        return " ".join(doc.split("\n\n")[0].split()) + f" (`bench/{script.name}`)"
    if stem not in ABOUT:
        raise SystemExit(f"bench/results/{stem}.csv names no bench script and has no entry in ABOUT "
                         f"(tools/performance.py): say what it holds")
    return ABOUT[stem]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _section(stem: str) -> str:
    header, rows = _rows(RESULTS / f"{stem}.csv")
    commands = list(dict.fromkeys(r.get("command") or "" for r in rows))
    hidden = HIDDEN if len(commands) <= 3 else tuple(c for c in HIDDEN if c != "command")
    shown = [c for c in header if c not in hidden and "commit" not in c and any(r.get(c) for r in rows)]
    lines = [f"## {stem}", "", _about(stem, rows), ""]
    machines = sorted({r["machine"] for r in rows})
    said = f"Machine: {'; '.join(machines)}."
    if len(commands) <= 3 and any(commands):
        said += " Commands: " + ", ".join(f"`{c}`" for c in commands if c) + "."
    lines += [said, ""]
    lines += ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(_cell(r.get(c) or "") for c in shown) + " |" for r in rows]
    return "\n".join([*lines, ""])


def headline() -> str:
    """The table of current ratios: the latest row with a ratio of each file in HEADLINES."""
    lines = ["| what the ratio compares | ratio | target | measured (load) |", "|---|---|---|---|"]
    for stem, (what, target, case) in HEADLINES.items():
        path = RESULTS / f"{stem}.csv"
        if not path.exists():
            continue
        rows = [r for r in _rows(path)[1] if r.get("ratio")]
        if not rows:
            continue
        last = rows[-1]
        label = f"{what} ({case} {last[case]})" if case and last.get(case) else what
        lines.append(f"| [{stem}](docs/performance.md#{stem}): {label} | **{float(last['ratio']):.3g}** | "
                     f"{target or '—'} | {last['date'][:10]} ({last['load'] or '?'}) |")
    return "\n".join(lines)


def page() -> str:
    stems = sorted(p.stem for p in RESULTS.glob("*.csv"))
    ordered = [s for s in HEADLINES if s in stems] + [s for s in stems if s not in HEADLINES and s not in ABOUT] + [
        s for s in ABOUT if s in stems]
    intro = ("<!-- generated by tools/performance.py from bench/results/*.csv: edit those, then run it -->\n"
             "# Performance\n\n"
             "Every figure here is a row of `bench/results/<name>.csv`: each bench script appends one dated row per "
             "run (`bench/record.py`: machine, load average, commit, command, figures), and this page is generated "
             "from those files (`python tools/performance.py`; a test keeps it in step). Most rows come from the "
             "project's shared 2-core development machine, often under load from other jobs, so read a wall time "
             "with its load; a ratio compares two sides run interleaved in one session. Rows imported from the "
             "README's old log say so in their note, and say whether their commit is the code measured or the one that "
             "reported the figure. Re-measure with the command of a row; `BIRD_BENCH_RESULTS=DIR` "
             "sends rows elsewhere.\n\n## Current ratios\n\n")
    table = headline().replace("](docs/performance.md#", "](#")
    return intro + table + "\n\n" + "\n".join(_section(s) for s in ordered)


def readme_block(text: str) -> str:
    """README text with its generated block replaced by the current ratios."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n" + headline() + "\n" + END + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file differs from what it would be")
    args = parser.parse_args(argv)
    wanted = {PAGE: page(), README: readme_block(README.read_text())}
    stale = [p.relative_to(ROOT) for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if args.check:
        if stale:
            print(f"out of step with bench/results/: {[str(p) for p in stale]}; run python tools/performance.py")
            return 1
        return 0
    for path, text in wanted.items():
        path.write_text(text)
    print(f"wrote {[str(p) for p in stale] or 'nothing (in step)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
