"""The report of `make mutate`: scores, stale runs and the notes that explain survivors (docs/mutation/notes.toml);
stores each module's results (docs/mutation/results.json) and writes docs/mutation.md and
docs/mutation_survivors.md from them."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

from .modules import KILLED, MODULES, NOTES, REPORT, ROOT, SURVIVORS, TARGET
from .staging import _hashes


def stale(entry: dict) -> list[str]:
    """The module's source files that changed since its recorded run: by hash, or for a run recorded without hashes
    (before they were kept), files git last changed on a later day than the run's date."""
    recorded = entry.get("sha256")
    if recorded is None:
        return [f for f in entry["files"] if (_last_commit_day(f) or "") > entry["date"]]
    return [f for f in entry["files"] if f in recorded and _hashes((f,))[f] != recorded[f]]


def _last_commit_day(path: str) -> str | None:
    """The day (YYYY-MM-DD) of the last commit that changed `path`; None outside a git checkout."""
    try:
        proc = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    day = proc.stdout.strip()
    return day if proc.returncode == 0 and day else None


def _load_notes() -> list[dict]:
    return tomllib.loads(NOTES.read_text()).get("note", []) if NOTES.exists() else []


def _note_for(module: str, s: dict, notes: list[dict]) -> dict | None:
    for n in notes:
        if n["module"] == module and n["function"] == s["function"] and n["added"] == s["added"] \
                and n.get("removed", s["removed"]) == s["removed"]:
            return n
    return None


def _score(entry: dict, module: str, notes: list[dict]) -> tuple[int, int, int, float]:
    """(killed, equivalent, counted, score) with score = killed / (checked - equivalent); a stopped run leaves
    some mutants not checked, and they are left out."""
    killed = sum(v for k, v in entry["counts"].items() if k in KILLED)
    equivalent = sum(1 for s in entry["survivors"] if (_note_for(module, s, notes) or {}).get("kind") == "equivalent")
    counted = entry["total"] - entry["counts"].get("not checked", 0) - equivalent
    return killed, equivalent, counted, killed / counted if counted else 1.0


def unused_notes(results: dict, notes: list[dict]) -> list[dict]:
    """The notes that explain no surviving mutant of the stored results (their code changed or a test kills them
    now): to be pruned from notes.toml."""
    return [n for n in notes if not any(_note_for(n["module"], s, [n]) for s in
                                        results.get(n["module"], {}).get("survivors", []))]


def prune_notes(results: dict) -> int:
    """Remove the unused notes (unused_notes) from notes.toml, keeping its header and every other note as written;
    returns how many were removed."""
    text = NOTES.read_text()
    head, *blocks = text.split("[[note]]\n")
    unused = unused_notes(results, _load_notes())
    kept = [b for b in blocks if tomllib.loads(b) not in unused]
    NOTES.write_text(head + "".join(f"[[note]]\n{b}" for b in kept))
    return len(blocks) - len(kept)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _store(path: Path, name: str, entry: dict) -> None:
    """Update one module's entry in a results file (re-read first: another run may have written it)."""
    results = json.loads(path.read_text()) if path.exists() else {}
    results[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(results.items())), indent=1, ensure_ascii=False) + "\n")


BEGIN, END = "<!-- mutation:begin (written by tools/mutate.py) -->", "<!-- mutation:end -->"


def _table(results: dict, notes: list[dict]) -> list[str]:
    lines = ["| module | files | tests | mutants | killed | equivalent | score | command | date | wall |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, module in MODULES.items():
        if name not in results:
            lines.append(f"| {name} | {', '.join(f'`{f}`' for f in module.files)} | | | | | not run | | | |")
            continue
        e = results[name]
        killed, equivalent, _, score = _score(e, name, notes)
        unchecked = e["counts"].get("not checked", 0)
        flag = "" if e["finished"] else f" (stopped: {e['total'] - unchecked} of {e['total']} checked)"
        flag += " stale (source changed since the run)" if stale(e) else ""
        flag += f" below the {TARGET:.0%} target" if score < TARGET else ""
        wall = f"{e['wall_s']} s" if e["wall_s"] else "not recorded"
        lines.append(f"| {name} | {', '.join(f'`{f}`' for f in e['files'])} | "
                     f"{', '.join(f'`{t}`' for t in e['tests'])} | {e['total']} | {killed} | {equivalent} | "
                     f"**{score:.1%}**{flag} | `{e['command']}` | {e['date']} | {wall} |")
    return lines


def _survivors(results: dict, notes: list[dict]) -> list[str]:
    lines = []
    for name, e in results.items():
        if not e["survivors"]:
            continue
        lines += ["", f"## {name}", "", "| function | change | status | kind | why |", "|---|---|---|---|---|"]
        for s in e["survivors"]:
            note = _note_for(name, s, notes) or {}
            change = f"`{_md(s['removed'])}` → `{_md(s['added'])}`"
            lines.append(f"| {s['function']} | {change} | {s['status']} | {note.get('kind', 'not triaged (counted as killable)')} | "
                         f"{_md(note.get('why', ''))} |")
    return lines


def write_report(results: dict) -> None:
    """Replace the generated part of docs/mutation.md (between the markers) with the table, and write every survivor
    to docs/mutation_survivors.md."""
    notes = _load_notes()
    unused = [f"- {n['module']}: {n['function']}: `{_md(n['added'])}`" for n in unused_notes(results, notes)]
    if unused:
        unused = ["Unused notes (in docs/mutation/notes.toml, matching no surviving mutant; to be pruned):", "",
                  *unused, ""]
    block = [BEGIN, "", *_table(results, notes), "", *unused,
             "Every surviving mutant, with why it survives: [surviving mutants](mutation_survivors.md).", "", END]
    text = REPORT.read_text() if REPORT.exists() else f"# Mutation testing\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    REPORT.write_text(head + "\n".join(block) + tail)
    SURVIVORS.write_text("\n".join([
        "<!-- generated by tools/mutate.py from docs/mutation/results.json and notes.toml -->", "# Surviving mutants",
        "", "The mutants the tests did not kill, per module ([mutation testing](mutation.md) says how they were found "
        "and scored). Score = killed / (mutants - equivalent); timeouts count as killed; `no tests` = no fast test "
        "runs the line.", *_survivors(results, notes)]) + "\n")
