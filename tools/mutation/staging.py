"""Staging and running mutmut for one module: a copy of the package as it installs under .mutmut/<module>/, mutmut run
there (in full, resumed, or its set-up only), and its record read back (verdicts, the surviving mutants' diffs).

mutmut names a mutant after the module path of its file, and bird installs methods/, envs/ and analysis/ under
the `bird` namespace (pyproject package-dir). So each run stages the package as it installs (bird/ with
bird/analysis, bird/envs, bird/methods inside), plus conf/ and tests/, under .mutmut/<module>/ and runs mutmut
there with only that module's files mutated and only the fast tests that cover it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .modules import KILLED, LAYOUT, MODULES, ROOT, STAGE, Module, _staged

# A pytest plugin for the mutant runs: a mutant's tests run fastest first (by the call durations mutmut recorded in
# its statistics run), so that a killed mutant stops (-x) at its cheapest failing test.
ORDER_PLUGIN = '''"""Written by tools/mutate.py: run the selected tests fastest first."""
import json
from pathlib import Path


def pytest_collection_modifyitems(session, config, items):
    try:
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
'''


def _clear_keeping_mutants(stage: Path, module: Module) -> None:
    """Empty an earlier stage except mutmut's record of the module: its statistics and, per mutated file, the
    mutants, .meta (verdicts, function hashes) and .spans. The mutated files are dated 1970 so that mutmut
    regenerates them from the fresh copy of the source (it compares modification times) and keeps the verdicts of
    the functions whose hash is unchanged."""
    keep = {stage / "mutants" / "mutmut-stats.json"}
    for f in module.files:
        mutated = stage / "mutants" / _staged(f)
        keep |= {mutated, mutated.with_name(mutated.name + ".meta"), mutated.with_name(mutated.name + ".spans")}
    for path in sorted(stage.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path in keep or (path.is_dir() and any(k.is_relative_to(path) for k in keep)):
            continue
        path.unlink() if path.is_file() or path.is_symlink() else path.rmdir()
    for f in module.files:
        os.utime(stage / "mutants" / _staged(f), (0, 0))


def _stage(name: str, module: Module, resume: bool = False, changed: bool = False) -> Path:
    """A fresh copy of the package as installed, conf/, tests/ and a pyproject with the mutmut settings.
    With `resume`, an earlier stage keeps its mutants and results and only gets the current tests/; with `changed`,
    it keeps only mutmut's record of the module (`_clear_keeping_mutants`) and gets everything else fresh."""
    stage = STAGE / name
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "notebooks")
    extra = ["conf", "docs", "methods", "envs", "analysis", "pyproject.toml", "mutate_order.py"]
    if changed:
        _clear_keeping_mutants(stage, module)
        for top, target in LAYOUT.items():
            shutil.copytree(ROOT / top, stage / target, ignore=ignore, dirs_exist_ok=True)
        for folder in ("conf", "docs", "tests", "methods", "envs", "analysis"):
            shutil.copytree(ROOT / folder, stage / folder, ignore=ignore, dirs_exist_ok=True)
    elif resume and (stage / "mutants").is_dir():
        shutil.rmtree(stage / "tests")
        shutil.copytree(ROOT / "tests", stage / "tests", ignore=ignore)
    else:
        shutil.rmtree(stage, ignore_errors=True)
        for top, target in LAYOUT.items():
            shutil.copytree(ROOT / top, stage / target, ignore=ignore, dirs_exist_ok=True)
        # the repo-relative data (conf/, methods/prompts, docs/) and the folders the tests read as files, at the root too
        for folder in ("conf", "docs", "tests", "methods", "envs", "analysis"):
            shutil.copytree(ROOT / folder, stage / folder, ignore=ignore)
    (stage / "mutate_order.py").write_text(ORDER_PLUGIN)
    settings = {
        "source_paths": ["bird"],
        "only_mutate": [_staged(f) for f in module.files],
        "also_copy": extra,
        "pytest_add_cli_args": ["-m", "not slow", "-p", "no:cacheprovider", "-p", "mutate_order", "-q"],
        "pytest_add_cli_args_test_selection": list(module.tests),
        "process_isolation": "forkserver",
        "use_git_change_detection": False,
    }
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    text = (ROOT / "pyproject.toml").read_text() + "\n[tool.mutmut]\n" + "\n".join(lines) + "\n"
    (stage / "pyproject.toml").write_text(text)
    return stage


def _mutmut(stage: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run mutmut in `stage`; on a timeout (or an interrupt) its whole process group is stopped."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    # `python -m mutmut`: a venv layered on another (a worktree's) has no mutmut script of its own
    proc = subprocess.Popen([sys.executable, "-m", "mutmut", *args], cwd=stage, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate()
        if isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
            raise subprocess.TimeoutExpired(proc.args, timeout or 0, out, err) from None
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _statuses(stage: Path, module: Module) -> dict[str, str]:
    from mutmut.stats import status_by_exit_code

    out: dict[str, str] = {}
    for f in module.files:
        meta = stage / "mutants" / (_staged(f) + ".meta")
        data = json.loads(meta.read_text())
        out.update({k: status_by_exit_code[v] for k, v in data["exit_code_by_key"].items()})
    return out


def _metas(stage: Path, module: Module) -> dict[str, dict]:
    """mutmut's record of each of the module's files (exit code by mutant, hash by function)."""
    return {f: json.loads((stage / "mutants" / (_staged(f) + ".meta")).read_text()) for f in module.files}


def _keep_kills(stage: Path, module: Module, before: dict[str, dict]) -> None:
    """After a resumed run: mutmut forgets every verdict when the module's test selection changed, so the killed
    mutants of the run it continues are written back, for functions whose source is unchanged (same hash)."""
    from mutmut.stats import status_by_exit_code

    for f, meta in _metas(stage, module).items():
        old = before.get(f)
        if old is None:
            continue
        for key, code in meta["exit_code_by_key"].items():
            was = old["exit_code_by_key"].get(key)
            fn = key.partition("__mutmut_")[0].rpartition(".")[2]
            same = old["hash_by_function_name"].get(fn) == meta["hash_by_function_name"].get(fn)
            if code is None and was is not None and status_by_exit_code[was] in KILLED and same:
                meta["exit_code_by_key"][key] = was
        (stage / "mutants" / (_staged(f) + ".meta")).write_text(json.dumps(meta))


def _change(diff: str) -> tuple[str, str]:
    """The removed and added source lines of a mutant's diff, whitespace-collapsed."""
    minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    squash = lambda lines: " / ".join(" ".join(x.split()) for x in lines)  # noqa: E731
    return squash(minus), squash(plus)


def _function(key: str) -> str:
    """`bird.llm.retry.xǁRetryPolicyǁwait_s__mutmut_3` -> `RetryPolicy.wait_s`."""
    mangled = key.rpartition(".")[2].partition("__mutmut_")[0]
    return mangled.removeprefix("x_").replace("xǁ", "").replace("ǁ", ".")


NO_MUTANT = "baseline-only"  # a name no mutant has: `mutmut run` stops after generating mutants and its stats run


def stale_copies(stage: Path, module: Module) -> list[str]:
    """The package's files whose copy in the stage differs from the source now (the module's own against the stage's
    source copy, the others against their copies in mutants/): a resumed run would test old code, so it needs
    --changed instead."""
    own = {_staged(f) for f in module.files}
    out = []
    for top, target in LAYOUT.items():
        for src in sorted((ROOT / top).rglob("*.py")):
            staged = f"{target}/{src.relative_to(ROOT / top).as_posix()}"
            copy = stage / staged if staged in own else stage / "mutants" / staged
            if "__pycache__" not in src.parts and (not copy.is_file() or copy.read_bytes() != src.read_bytes()):
                out.append(staged)
    return out


FAILED_EARLY = ("Failed to run clean test", "failed to collect stats")  # mutmut's words when it checked no mutant


def failed_early(stage: Path) -> str | None:
    """What mutmut said when the run's log shows it stopped before its first mutant (None otherwise)."""
    log = stage / "mutmut.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    return next((words for words in FAILED_EARLY if words in text), None)


def last_words(stage: Path, early: str | None = None) -> str:
    """What mutmut said last in a run's log: `early` (failed_early's words) when given, else its last line of text
    (its spinner lines left out)."""
    if early:
        return f"mutmut said: {early}"
    log = stage / "mutmut.log"
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines()] if log.is_file() else []
    said = [line for line in lines if line and not line.startswith(("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"))]
    return f"mutmut said: {said[-1]}" if said else "mutmut wrote no log"


def run_module(name: str, timeout_s: float, max_children: int, resume: bool = False) -> dict:
    """Run mutmut over one module (after a source change: incremental.run_changed). `resume` keeps the last run's
    results and re-checks only the mutants that were not killed (survivors, not checked, no tests) with the current
    tests: killed ones stay killed when tests are only added; the source must be unchanged (mutmut regenerates
    mutants of changed functions)."""
    module = MODULES[name]
    rerun, before = [], {}
    if resume and (STAGE / name / "mutants").is_dir():
        changed = stale_copies(STAGE / name, module)
        if changed:
            raise SystemExit(f"--resume {name}: {len(changed)} source file(s) changed since its stage was made (e.g. "
                             f"{', '.join(changed[:3])}); run `python tools/mutate.py {name} --changed` instead")
        rerun = sorted(k for k, v in _statuses(STAGE / name, module).items() if v not in KILLED)
        before = _metas(STAGE / name, module)
    stage = _stage(name, module, resume=bool(rerun))
    start = time.monotonic()
    try:
        proc = _mutmut(stage, "run", "--max-children", str(max_children), *rerun, timeout=timeout_s)
        log, finished = proc.stdout + proc.stderr, proc.returncode == 0
    except subprocess.TimeoutExpired as exc:
        log, finished = f"{exc.stdout or ''}{exc.stderr or ''}", False
    (stage / "mutmut.log").write_text(log)
    if rerun:
        _keep_kills(stage, module, before)
    entry = collect(name, round(time.monotonic() - start), finished)
    if rerun:
        entry["command"] += " --resume"
    return entry


# `mutmut show KEY` for many mutants in one process (one `mutmut show` process per survivor took minutes)
DIFFS = """import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
todo = json.load(sys.stdin)
print(json.dumps({key: get_diff_for_mutant(key, path=path) for key, path in todo}))
"""


def _diffs(stage: Path, module: Module, keys: list[str]) -> dict[str, str]:
    """{mutant: its diff, as `mutmut show` prints it}."""
    if not keys:
        return {}
    prefix = {f: _staged(f).removesuffix(".py").replace("/", ".") + "." for f in module.files}
    todo = [(k, next(_staged(f) for f, p in prefix.items() if k.startswith(p))) for k in keys]
    proc = subprocess.run([sys.executable, "-c", DIFFS], cwd=stage, input=json.dumps(todo), capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(proc.stdout)


def collect(name: str, wall_s: int = 0, finished: bool = False) -> dict:
    """The results of the last mutmut run of `name` in its stage (also of one that was stopped)."""
    module = MODULES[name]
    stage = STAGE / name
    statuses = _statuses(stage, module)
    survivors = []
    alive = {key: status for key, status in sorted(statuses.items()) if status not in KILLED | {"not checked"}}
    diffs = _diffs(stage, module, list(alive))
    for key, status in alive.items():
        removed, added = _change(diffs[key])
        survivors.append({"key": key, "function": _function(key), "status": status, "removed": removed,
                          "added": added})
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return {"files": list(module.files), "tests": list(module.tests), "date": dt.date.today().isoformat(),
            "sha256": _hashes(module.files + module.tests), "wall_s": wall_s, "finished": finished,
            "total": len(statuses),
            "counts": counts, "survivors": survivors,
            "command": f"python tools/mutate.py {name}"}


def _hashes(paths: tuple[str, ...]) -> dict[str, str]:
    """{repo path: sha256 of the file as it is now}, for source files and test files (a test's `::name` dropped)."""
    files = dict.fromkeys(p.partition("::")[0] for p in paths)
    return {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest() if (ROOT / f).is_file() else "missing"
            for f in files}


def baseline(name: str, timeout_s: float) -> dict:
    """mutmut's set-up for one module, without its mutation run: the mutants generated and the listed tests run once
    under mutmut, recording which test reaches which function (mutmut stops there when asked for a mutant that does
    not exist); then its clean-test and forced-failure runs, which it makes before the first mutant it is asked for
    (one: the one the fastest tests reach). What the full run would first fail on, and its tests' worst-case time."""
    module = MODULES[name]
    stage = _stage(name, module)
    try:
        first = _mutmut(stage, "run", NO_MUTANT, timeout=timeout_s)
        stats = json.loads((stage / "mutants" / "mutmut-stats.json").read_text())
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": f"the listed tests ran past --timeout={timeout_s:g} s under mutmut"}
    except OSError:
        return {"ok": False, "why": "the listed tests failed under mutmut", "log": (first.stdout + first.stderr)[-3000:]}
    # mutmut's print-time-estimates would do this, but it empties the stats file of a stage made this way
    tests, seconds = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    keys = _statuses(stage, module)
    timed = sorted((sum(seconds.get(t, 0.0) for t in tests[k.partition("__mutmut_")[0]]), k)
                   for k in keys if tests.get(k.partition("__mutmut_")[0]))
    out = {"mutants": len(keys), "no_tests": len(keys) - len(timed), "worst_case_s": round(sum(t for t, _ in timed))}
    if not timed:
        return {**out, "ok": False, "why": "no listed test reaches a mutant", "log": first.stdout[-3000:]}
    try:
        clean = _mutmut(stage, "run", "--max-children", "1", timed[0][1], timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {**out, "ok": False, "why": f"the clean run ran past --timeout={timeout_s:g} s"}
    log = clean.stdout + clean.stderr
    failed = [w for w in ("Failed to run clean test", "Unable to force test failures") if w in log]
    return {**out, "ok": clean.returncode == 0 and not failed, "why": "; ".join(failed) or f"exit {clean.returncode}",
            "log": log[-3000:]}
