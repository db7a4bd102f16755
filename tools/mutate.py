"""Mutation testing of bird's core modules with mutmut, one module at a time: `make mutate` (docs/mutation.md).

mutmut names a mutant after the module path of its file, and bird installs methods/, envs/ and analysis/ under
the `bird` namespace (pyproject package-dir). So each run stages the package as it installs (bird/ with
bird/analysis, bird/envs, bird/methods inside), plus conf/ and tests/, under .mutmut/<module>/ and runs mutmut
there with only that module's files mutated and only the fast tests that cover it.

Results go to docs/mutation/results.json (one entry per module, kept between runs) and docs/mutation.md is written
from it, with the surviving mutants explained in docs/mutation/notes.toml.

    python tools/mutate.py                      # every module (hours on 2 cores)
    python tools/mutate.py retry cache          # some modules
    python tools/mutate.py --report             # rewrite docs/mutation.md from the stored results only
    python tools/mutate.py --baseline bundle_verify   # check a module's set-up (no mutation run)
    python tools/mutate.py bundle_compare --changed  # after a source change: re-check only what it can affect
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / ".mutmut"
RESULTS = ROOT / "docs" / "mutation" / "results.json"
NOTES = ROOT / "docs" / "mutation" / "notes.toml"
REPORT = ROOT / "docs" / "mutation.md"
SURVIVORS = ROOT / "docs" / "mutation_survivors.md"
TARGET = 0.85
# where each top-level folder lives inside the installed package
LAYOUT = {"bird": "bird", "analysis": "bird/analysis", "envs": "bird/envs", "methods": "bird/methods"}
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass(frozen=True)
class Module:
    """A core module: its source files (repo paths) and the narrowest fast tests that cover them."""

    files: tuple[str, ...]
    tests: tuple[str, ...]


BUNDLE_TESTS = ("tests/bundle/test_bundle_unit.py", "tests/bundle/test_bundle_tampering.py")
MODULES: dict[str, Module] = {
    "demos": Module(("bird/components/demos.py",), ("tests/methods/test_demos_unit.py",)),
    "demo_fitness": Module(("bird/components/demo_fitness.py",), ("tests/methods/test_demo_fitness.py",)),
    "trajectories": Module(("bird/components/trajectories.py",),
                           ("tests/methods/test_tpe.py", "tests/methods/test_trajectory_store.py")),
    "metrics": Module(("analysis/metrics.py",), ("tests/analysis/test_analysis_metrics.py",)),
    "bootstrap": Module(("analysis/bootstrap.py",), ("tests/analysis/test_analysis_bootstrap.py",)),
    "bradley_terry": Module(("analysis/bradley_terry.py",), ("tests/analysis/test_analysis_bradley_terry.py",)),
    "epic": Module(("analysis/epic.py",), ("tests/analysis/test_analysis_epic.py",)),
    "report": Module(("analysis/report.py",), (
        "tests/analysis/test_report_unit.py", "tests/analysis/test_report_tables.py",
        "tests/analysis/test_report_figures.py", "tests/analysis/test_report_clips.py",
        "tests/analysis/test_analysis_report.py::test_leaderboard_numbers_match_hand_computed_values")),
    "retry": Module(("bird/llm/retry.py",), ("tests/llm/test_wiring.py",)),
    "cache": Module(("bird/llm/cache.py",), ("tests/llm/test_cache_unit.py",)),
    "offline_mutation": Module(("bird/llm/offline/mutation.py",), ("tests/test_offline_mutation.py",)),
    "reward_worker": Module(("bird/reward/worker.py",), ("tests/reward/test_worker_forked.py",)),
    "reward_layers": Module(("bird/reward/isolation.py", "bird/reward/landlock.py", "bird/reward/seccomp_policy.py"),
                            ("tests/reward/test_isolation_layers.py",)),
    "reward_static": Module(("bird/reward/static.py",),
                            ("tests/reward/test_static_unit.py", "tests/security/test_static_controls.py")),
    "reward_channel": Module(("bird/reward/protocol.py",), ("tests/reward/test_channel_and_wall_unit.py",)),
    "reward_pywall": Module(("bird/reward/pywall.py",), ("tests/reward/test_channel_and_wall_unit.py",)),
    "registry": Module(("bird/registry.py",), ("tests/test_registry.py",)),
    "branch_detector": Module(("bird/method_branches.py",), ("tests/test_registry.py",)),
    # written since the run above (issue 44)
    "bundle_archive": Module(("bird/bundle/archive.py", "bird/bundle/reader.py"),
                             ("tests/bundle/test_archive_unit.py", "tests/bundle/test_unpack_staging.py",
                              *BUNDLE_TESTS)),
    "bundle_verify": Module(("bird/bundle/verify.py", "bird/bundle/transcript.py"),
                            ("tests/bundle/test_verify_unit.py", *BUNDLE_TESTS)),
    "bundle_compare": Module(("bird/bundle/compare.py",), ("tests/bundle/test_compare_unit.py", *BUNDLE_TESTS)),
    "bundle_pack": Module(("bird/bundle/pack.py",), ("tests/bundle/test_pack_unit.py", *BUNDLE_TESTS)),
    "bundle_replay": Module(("bird/bundle/replay.py",), ("tests/bundle/test_replay_unit.py",
                                                         "tests/bundle/test_bundle_tampering.py")),
    "jax_store": Module(("bird/learners/jax_executables.py",), (
        "tests/jaxpath/test_jax_store_unit.py", "tests/jaxpath/test_store_fingerprint.py",
        *(f"tests/jaxpath/test_jax_executables.py::test_{t}" for t in (
            "a_compiled_function_is_stored_then_loaded_instead_of_compiled",
            "a_reader_loads_from_the_store_and_adds_nothing_to_it", "a_torn_store_file_is_compiled_again_and_replaced",
            "the_compile_step_refuses_to_run_with_jaxs_persistent_cache",
            "a_stored_program_is_found_only_for_its_key_environment_and_bytes",
            "the_store_keeps_the_most_recently_used_programs",
            "a_stored_program_is_not_found_once_birds_source_changed")))),
    "jax_settings": Module(("bird/learners/jax_settings.py",), ("tests/jaxpath/test_jax_settings_unit.py", *(
        f"tests/jaxpath/test_jax_learner.py::test_settings_{t}" for t in (
            "take_the_command_line_then_the_task_table_then_brax_defaults",
            "shrink_the_rollout_batch_until_the_budget_affords_min_updates", "reject_what_brax_rejects")))),
    # the training program's pieces, called in the test process op by op (jax.disable_jit(): a traced function would
    # be traced once and cached, hiding later mutants) on a point env (tests/jaxpath/point_env.py); the group's
    # training (jax_ppo) runs its compiled program on that env behind a stand-in adapter
    "jax_core": Module(("bird/learners/jax_core.py", "bird/learners/jax_rewards.py"),
                       ("tests/jaxpath/test_jax_core_unit.py",)),
    "jax_ppo": Module(("bird/learners/jax_ppo.py",), ("tests/jaxpath/test_jax_ppo_unit.py",)),
    "jax_rollouts": Module(("bird/learners/jax_rollouts.py",), ("tests/jaxpath/test_jax_rollouts_unit.py",)),
    "programs": Module(("bird/learners/programs.py",), ("tests/jaxpath/test_programs_unit.py",)),
    # the host in the test process against a scripted stand-in for the trainer's WorkerProcess and a test clock
    # (test_trainer_host.py runs real trainers behind the real protocol, about 25 s a pass)
    "trainer_host": Module(("bird/learners/trainer_host.py",), ("tests/security/test_trainer_host_unit.py",)),
    "trainer_replies": Module(("bird/learners/trainer_replies.py", "bird/learners/jax_outputs.py"),
                              ("tests/security/test_trainer_replies_unit.py", "tests/security/test_reply_parsing.py",
                               "tests/test_jax_outputs.py",
                               "tests/security/test_trainer_host.py")),
    "culprit_search": Module(("bird/learners/jax_isolated.py",), ("tests/test_culprit_search.py",)),
    # the trainer process's side, run in the test process against a stand-in for the compiled training run
    # (_setup and compile_main build the real one: they run only in the trainer and its compile step)
    "trainer": Module(("bird/learners/trainer.py",), ("tests/security/test_trainer_protocol_unit.py",
                                                      "tests/security/test_reply_parsing.py")),
    # both checks on artefacts built in the test process (test_artefacts_unit.py), and a genuine one through the
    # inspector's checks; test_jax_export.py reaches them too (jax_export.load), for a few artefacts made in sandboxes
    "reward_artefacts": Module(("bird/reward/artefacts.py",), ("tests/jaxpath/test_artefacts_unit.py",
                                                               "tests/jaxpath/test_inspector_unit.py")),
    # the inspecting process's checks run in the test process (test_inspector_unit.py); the process itself, behind
    # the layers, in test_jax_export.py
    "inspector": Module(("bird/reward/inspector.py",), (
        "tests/jaxpath/test_inspector_unit.py",
        "tests/jaxpath/test_jax_export.py::test_inspector_and_trainer_reject_host_callbacks_corrupt_bytes_or_the_wrong_"
        "signature")),
    "extract": Module(("bird/reward/extract.py",), ("tests/llm/test_extract_rules_unit.py", "tests/llm/test_extract_unit.py",
                                                    "tests/llm/test_answer_corpus.py")),
    # the judge's tests of test_judged_feedback.py (its others cover the stages around it: summaries, subtasks, the gate)
    "judgement": Module(("bird/components/judgement.py",), (
        "tests/test_judgement_unit.py",
        *(f"tests/test_judged_feedback.py::test_{t}" for t in (
            "era_u_prompts_and_selection_never_depend_on_the_benchmark_score_or_reference_reward",
            "score_scales_normalise_to_unit_or_refuse", "judge_score_averages_valid_calls_over_rollouts_and_subtasks",
            "judge_score_is_none_when_no_call_is_valid",
            "judge_repeats_multiply_the_calls_and_the_prompt_shows_subtasks_and_keyframes",
            "vlm_judge_is_shown_the_keyframes_saved_with_the_candidate_rendered_once_per_rollout",
            "the_judge_never_sees_the_total_own_reward_so_a_scaled_total_gets_the_same_request",
            "the_judge_evidence_check_catches_a_total_shown_to_the_judge",
            "the_judge_is_asked_for_the_failure_cascade_rubric_in_subtask_order")),
        "tests/test_judge_rollout_replay.py::test_a_vlm_judge_replays_each_rollout_from_its_own_reset[rda-_judge_scores]")),
    "leaderboard_artefacts": Module(("analysis/artefacts.py",), ("tests/analysis/test_report_artefacts.py",)),
    # new in the round of issues 36-43 (issue 44: "and the new modules of this round's issues")
    "escape": Module(("bird/escape.py",), ("tests/received/test_escape_unit.py",)),
    "files": Module(("bird/files.py",), ("tests/received/test_files_unit.py", "tests/received/test_received_files.py")),
    "state_codec": Module(("bird/state_codec.py",), ("tests/security/test_state_codec_unit.py",
                                                     "tests/security/test_received_code.py")),
    "sealed": Module(("bird/sealed.py",), ("tests/security/test_sealed_unit.py", "tests/security/test_received_code.py")),
    "received": Module(("bird/config/received.py", "bird/config/received_task.py"), (
        "tests/security/test_received_unit.py", "tests/security/test_received_configs.py",
        "tests/security/test_received_tasks.py")),
    "secrets": Module(("bird/config/secrets.py",), ("tests/security/test_secrets_unit.py",)),
    "plugins": Module(("bird/plugins.py",), ("tests/test_plugins_unit.py", "tests/test_plugins.py")),
    "answer_text": Module(("bird/llm/content.py", "bird/llm/visible.py"), ("tests/llm/test_answer_text_unit.py",)),
    "reward_sources": Module(("bird/reward/sources.py",),
                             ("tests/llm/test_sources_unit.py", "tests/llm/test_extract_rules_unit.py",
                              "tests/llm/test_extract_unit.py", "tests/llm/test_answer_corpus.py")),
    "end_state": Module(("bird/completed.py",), ("tests/test_completed.py",)),
    "sweep_ledger": Module(("bird/llm/sweep.py",), ("tests/llm/test_sweep_ledger_unit.py",
                                                    "tests/llm/test_sweep_caps.py::test_ledger_admits_exactly_the_cap_"
                                                    "across_processes")),
}


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


def _staged(path: str) -> str:
    top, _, rest = path.partition("/")
    return f"{LAYOUT[top]}/{rest}"


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


def run_module(name: str, timeout_s: float, max_children: int, resume: bool = False, changed: bool = False) -> dict:
    """Run mutmut over one module. `resume` keeps the last run's results and re-checks only the mutants that were
    not killed (survivors, not checked, no tests) with the current tests: killed ones stay killed when tests are
    only added; the source must be unchanged (mutmut regenerates mutants of changed functions)."""
    module = MODULES[name]
    if changed:
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
    rerun, before = [], {}
    if resume and (STAGE / name / "mutants").is_dir():
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


NO_MUTANT = "baseline-only"  # a name no mutant has: `mutmut run` stops after generating mutants and its stats run


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of {list(MODULES)} (default: all)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per module before mutmut is stopped")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (the machine has 2 cores)")
    parser.add_argument("--report", action="store_true", help="only rewrite docs/mutation.md and docs/mutation_survivors.md from stored results")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file to update and report from")
    parser.add_argument("--resume", action="store_true",
                        help="re-check only the last run's mutants that were not killed, with the current tests")
    parser.add_argument("--changed", action="store_true",
                        help="after a source change: re-check the mutants of changed or new functions and of their "
                             "callers, and the last run's survivors; the other verdicts of the last run are kept")
    parser.add_argument("--prune-notes", action="store_true",
                        help="remove the notes in notes.toml that match no surviving mutant of the stored results")
    parser.add_argument("--collect", action="store_true", help="record the modules' last (e.g. stopped) runs, run none")
    parser.add_argument("--baseline", action="store_true",
                        help="check the modules' set-up only (the listed tests pass under mutmut, reach mutants, and "
                             "fail when every mutant raises) and print the time estimates; no mutation run, no results")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {list(MODULES)}")
    if args.baseline:
        bad = 0
        for name in args.modules or list(MODULES):
            b = baseline(name, args.timeout)
            bad += not b["ok"]
            print(f"{name:22s} {'ok' if b['ok'] else 'FAILED: ' + b['why']}: {b.get('mutants', '?')} mutants, "
                  f"{b.get('no_tests', '?')} reached by no listed test, worst case {b.get('worst_case_s', '?')} s of "
                  "tests" + ("" if b["ok"] else "\n" + b.get("log", "")), flush=True)
        return 1 if bad else 0
    if args.collect:
        for name in args.modules:
            _store(args.results, name, collect(name))
    elif not (args.report or args.prune_notes):  # both only rewrite files from the stored results
        for name in args.modules or list(MODULES):
            print(f"mutate: {name} ...", flush=True)
            entry = run_module(name, args.timeout, args.max_children, args.resume, args.changed)
            previous = json.loads(args.results.read_text()).get(name) if args.results.exists() else None
            if entry["command"].endswith(("--resume", "--changed")) and previous:
                entry["wall_s"] += previous["wall_s"]  # the run it continued, and the runs before that
            print(f"mutate: {name}: {entry['total']} mutants, {entry['counts']}, {entry['wall_s']} s", flush=True)
            _store(args.results, name, entry)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    if args.prune_notes:
        print(f"mutate: {prune_notes(results)} unused notes removed from {NOTES.relative_to(ROOT)}")
    write_report(results)
    notes = _load_notes()
    for name, e in results.items():
        print(f"{name:18s} score {_score(e, name, notes)[3]:.1%}" + (" (stale)" if stale(e) else ""))
    for n in unused_notes(results, notes):
        print(f"unused note: {n['module']}: {n['function']}: {n['added']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
