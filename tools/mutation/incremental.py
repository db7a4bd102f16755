"""Incremental runs (`--changed`): after a source change, re-check the mutants of the changed or new functions and of
their callers, and the last run's survivors; the other verdicts of the last run are kept."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from .modules import KILLED, MODULES, STAGE, Module, _staged
from .staging import NO_MUTANT, _function, _metas, _mutmut, _stage, collect


def _callers(stage: Path, functions: set[str]) -> set[str]:
    """The functions that call any of `functions`, directly or through others (mangled names, as mutmut records
    who called whom in its statistics run), `functions` left out."""
    stats = json.loads((stage / "mutants" / "mutmut-stats.json").read_text())
    called_by = stats.get("function_dependencies", {})
    found, todo = set(), list(functions)
    while todo:
        for caller in called_by.get(todo.pop(), ()):
            if caller not in found and caller not in functions:
                found.add(caller)
                todo.append(caller)
    return found


def _mangled(key: str) -> str:
    """`bird.bundle.compare.x__metric__mutmut_3` -> `bird.bundle.compare.x__metric`."""
    return key.partition("__mutmut_")[0]


def _changed_plan(before: dict[str, dict], after: dict[str, dict]) -> tuple[set[str], set[str], dict[str, int]]:
    """What an incremental run re-checks, from mutmut's records before and after it regenerated the mutants of the
    changed source: (changed or new functions, the mutants to re-check: theirs and those the earlier run did not
    kill, {mutant: verdict kept}: the earlier kills in unchanged functions). A kill is kept even where mutmut forgot
    it (it forgets every verdict when the module's test selection changed): tests are only added."""
    from mutmut.stats import status_by_exit_code

    changed, rerun, kept = set(), set(), {}
    for f, meta in after.items():
        old = before.get(f, {"exit_code_by_key": {}, "hash_by_function_name": {}})
        prefix = _staged(f).removesuffix(".py").replace("/", ".") + "."
        changed |= {prefix + fn for fn, h in meta["hash_by_function_name"].items()
                    if old["hash_by_function_name"].get(fn) != h}
        for key in meta["exit_code_by_key"]:
            was = old["exit_code_by_key"].get(key)
            if _mangled(key) in changed or status_by_exit_code[was] not in KILLED:
                rerun.add(key)
            else:
                kept[key] = was
    return changed, rerun, kept


def _changed_run(name: str, module: Module, max_children: int, timeout_s: float) -> tuple[str, bool, dict]:
    """Re-check, after a source change, only what the change can affect (`_changed_plan`); mutmut's own run, told to
    check nothing (NO_MUTANT), first regenerates the mutants of the changed functions."""
    stage = STAGE / name
    before = _metas(stage, module)
    _stage(name, module, changed=True)
    deadline = time.monotonic() + timeout_s
    first = _mutmut(stage, "run", NO_MUTANT, timeout=timeout_s)
    after = _metas(stage, module)
    changed, _, kept = _changed_plan(before, after)
    callers = _callers(stage, changed)
    for f, meta in after.items():
        for key in meta["exit_code_by_key"]:
            keep = key in kept and _mangled(key) not in callers
            meta["exit_code_by_key"][key] = kept[key] if keep else None
        (stage / "mutants" / (_staged(f) + ".meta")).write_text(json.dumps(meta))
    todo = sum(v is None for m in after.values() for v in m["exit_code_by_key"].values())
    info = {"changed": sorted(_function(k + "__mutmut_") for k in changed),
            "callers": sorted(_function(k + "__mutmut_") for k in callers), "rechecked": todo}
    print(f"mutate: {name}: changed {info['changed']}, their callers {info['callers']}; re-checking {todo} of "
          f"{sum(len(m['exit_code_by_key']) for m in after.values())} mutants", flush=True)
    proc = _mutmut(stage, "run", "--max-children", str(max_children), timeout=max(1.0, deadline - time.monotonic()))
    return first.stdout + first.stderr + proc.stdout + proc.stderr, proc.returncode == 0, info


def run_changed(name: str, timeout_s: float, max_children: int) -> dict:
    """Run mutmut over one module after a source change (`--changed`): only what the change can affect is re-checked
    (`_changed_run`), from the stage of an earlier run, which must be there."""
    module = MODULES[name]
    if not (STAGE / name / "mutants" / "mutmut-stats.json").is_file():
        raise SystemExit(f"--changed needs an earlier run of {name} in {STAGE / name}; run it in full first")
    start = time.monotonic()
    try:
        log, finished, info = _changed_run(name, module, max_children, timeout_s)
    except subprocess.TimeoutExpired as exc:
        log, finished, info = f"{exc.stdout or ''}{exc.stderr or ''}", False, {}
    (STAGE / name / "mutmut.log").write_text(log)
    entry = collect(name, round(time.monotonic() - start), finished)
    entry["command"] += " --changed"
    entry["incremental"] = info
    return entry
