"""Long subprocesses that run beside the suite: commands that are not tests (bench scripts at smoke budgets) and what
several tests need made before them (compiled JAX programs, Brax episodes).

A test that needs one is marked `@pytest.mark.background("NAME")`. Once a session has collected its tests, conftest.py
starts every job they need in one runner process that runs them one after another (so together they never take more
than one core); with pytest-xdist the first worker to get there starts it, and every worker finds it through the
session's shared folder (tests/session_share.py). A test collects the job's exit status and output with
`result("NAME")`. Each job is a plain command from the repository root (`command(NAME, out)`): run it by hand to
debug it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import session_share

ROOT = Path(__file__).resolve().parents[1]


def _table(out: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (argv, extra environment); `out` is the job's own scratch folder. In the order the runner runs them."""
    py = sys.executable
    rows = {"BIRD_BENCH_RESULTS": str(out)}
    return {
        # the leak audit's random episodes of every Brax task (tests/prompt_rehearsal.py), made first: the
        # leak audit is the first long module (tests/conftest.py orders them)
        "brax_envs": ([py, "tests/jaxpath/warm_programs.py", "envs"], {}),
        # what the JAX path tests train, compiled into the session's JAX cache before they need it
        "jax_programs": ([py, "tests/jaxpath/warm_programs.py", "training", str(out)], {}),
        # bench/ scripts at smoke budgets (tests/bench/test_bench_scripts.py reads what they print); their result rows go
        # to the job's folder, not to bench/results/
        "make_bench": (["make", "-s", "bench", "STAMP=", f"PY={py}",
                        "ARGS=--steps 256 --n-envs 2 --repeats 1 --sandbox-repeats 1"], rows),
        "throughput": ([py, "bench/bench_throughput.py", "--env", "mujoco/hopper", "--steps", "256", "--repeats", "1"],
                       rows),
        "analysis": ([py, "bench/bench_analysis.py", "--n-runs", "200"], rows),
        "isolation": ([py, "bench/bench_isolation.py", "--repeats", "1", "--languages", "numpy", "jax"], rows),
        "video": ([py, "bench/bench_video.py", "--envs", "mujoco/inverted_pendulum", "--repeats", "1", "--set",
                   "budget.max_iterations=1", "budget.max_candidates=1", "budget.env_steps=256",
                   "budget.final_env_steps=256", "env.horizon=50"], rows),
        "bundle": ([py, "bench/bench_bundle.py", "--repeats", "1", "--out", str(out)], rows),
        "prompt_cache": ([py, "bench/bench_prompt_cache.py", "--set",
                          "budget.env_steps=256", "env.horizon=50"], rows),
        "warm_pool": ([py, "bench/bench_warm_pool.py", "--repeats", "1", "--set", "budget.max_iterations=1",
                       "budget.max_candidates=1", "budget.env_steps=256", "budget.final_env_steps=256"], rows),
        "pool_start": ([py, "bench/bench_pool_start.py", "--repeats", "1", "--set", "budget.max_iterations=1",
                        "budget.env_steps=256", "budget.final_env_steps=256"], rows),
        "metaworld_env": ([py, "bench/bench_metaworld_env.py", "--tasks", "push", "--repeats", "1"], rows),
        "babyai_ppo": ([py, "bench/bench_babyai_ppo.py", "--steps", "512", "--n-steps", "128", "--repeats", "1"], rows),
        "bird_anchors": ([py, "bench/bench_bird_anchors.py", "--episodes", "2", "--bird-episodes", "2", "--tasks",
                          "reacher_hold", "inverted_pendulum_balance"], rows),
        "quickstart": ([py, "bench/bench_quickstart.py", "--repeats", "1", "--set",
                        "budget.max_iterations=1", "budget.env_steps=256", "budget.final_env_steps=256",
                        "video.record=none"], rows),
        "search_time": ([py, "bench/bench_quickstart.py", "--repeats", "1", "--search", "method=oracle",
                         "env=mujoco/inverted_pendulum", "budget=smoke", "--set", "budget.final_env_steps=256",
                         "env.horizon=50", "video.record=none"], rows),
        "trainer_start": ([py, "bench/bench_trainer_start.py", "--task", "inverted_pendulum", "--repeats", "1",
                           "--set", "env.horizon=20"], rows),
        "device_dry_run": (["bash", "bench/device/run.sh", "--dry-run"],
                           {**rows, "PYTHON": py, "OUT": str(out), "BIRD_DEVICE_BUDGET_S": "840"}),
    }


NAMES = tuple(_table(Path()))


def command(name: str, out: Path) -> tuple[list[str], dict[str, str]]:
    """The job's argv and extra environment."""
    if name not in NAMES:
        raise ValueError(f"unknown background job {name!r}; known: {list(NAMES)}")
    return _table(out)[name]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    out: Path  # the job's scratch folder (removed when the session ends)


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, finished but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (OSError, IndexError):
        return False


def _registry() -> Path:
    """runners.json: [{"dir", "pid", "names"}] of the runners started this session, by any worker."""
    return session_share.folder() / "background" / "runners.json"


def runners() -> list[dict]:
    """The runners started this session (runners.json), by any worker."""
    path = _registry()
    return json.loads(path.read_text()) if path.exists() else []


def _launch(names: list[str], index: int) -> dict:
    """One runner process for these jobs, in turn; job NAME writes NAME.out and NAME.err, then NAME.rc when done."""
    folder = _registry().parent / f"runner-{index}"
    folder.mkdir(parents=True)
    plan = []
    for name in names:
        argv, env = command(name, folder / name)
        plan.append({"name": name, "argv": argv, "env": env, "out": str(folder / name)})
    (folder / "plan.json").write_text(json.dumps(plan))
    with open(folder / "runner.log", "w") as log:
        proc = subprocess.Popen([sys.executable, __file__, str(folder), str(session_share.suite_pid())], cwd=ROOT,
                                start_new_session=True, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    return {"dir": str(folder), "pid": proc.pid, "names": names}


def start(names: list[str]) -> None:
    """Run these jobs (those no runner has yet, whichever worker started it), in the table's order, one after another
    beside the suite."""
    unknown = set(names) - set(NAMES)
    if unknown:
        raise ValueError(f"unknown background jobs {sorted(unknown)}; known: {list(NAMES)}")
    _registry().parent.mkdir(exist_ok=True)
    with session_share.locked("background"):
        known = runners()
        started = {n for r in known for n in r["names"]}
        todo = [n for n in NAMES if n in set(names) - started]
        if todo:
            known.append(_launch(todo, len(known)))
            _registry().write_text(json.dumps(known))


def result(name: str, timeout: float = 1800) -> Result:
    """The job's exit status and output, once it has finished (started now if no runner has it)."""
    start([name])
    runner = next(r for r in runners() if name in r["names"])
    folder = Path(runner["dir"])
    done, deadline = folder / f"{name}.rc", time.monotonic() + timeout
    while not done.exists():
        if not _alive(runner["pid"]) and not done.exists():
            raise RuntimeError(f"the background runner exited before {name!r} finished: "
                               + (folder / "runner.log").read_text()[-3000:])
        if time.monotonic() > deadline:
            raise TimeoutError(f"background job {name!r} has not finished after {timeout:.0f} s")
        time.sleep(0.5)
    text = [(folder / f"{name}.{s}").read_text(errors="replace") for s in ("out", "err")]
    return Result(int(done.read_text()), *text, folder / name)


def stop() -> None:
    """Kill what is still running and remove the jobs' files: at the end of the session, in the process that owns it
    (an xdist worker leaves that to the controller)."""
    if session_share.is_worker() or not _registry().parent.exists():
        return
    for runner in runners():
        if _alive(runner["pid"]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(runner["pid"], signal.SIGKILL)
    shutil.rmtree(_registry().parent, ignore_errors=True)


def _run_plan(folder: Path, suite_pid: int) -> None:
    """The runner process: each job of plan.json in turn. When the suite's process is gone (killed, so its session end
    never stopped us), the runner kills its process group: the running job, its children and itself."""
    for job in json.loads((folder / "plan.json").read_text()):
        Path(job["out"]).mkdir(parents=True, exist_ok=True)
        with open(folder / f"{job['name']}.out", "w") as out, open(folder / f"{job['name']}.err", "w") as err:
            proc = subprocess.Popen(job["argv"], cwd=ROOT, env={**os.environ, **job["env"]}, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err)
            while proc.poll() is None:
                if not _alive(suite_pid):
                    shutil.rmtree(folder, ignore_errors=True)
                    os.killpg(0, signal.SIGKILL)  # the runner's process group: the job, its children and the runner
                time.sleep(0.5)
        (folder / f"{job['name']}.rc.tmp").write_text(str(proc.returncode))
        os.replace(folder / f"{job['name']}.rc.tmp", folder / f"{job['name']}.rc")


if __name__ == "__main__":
    _run_plan(Path(sys.argv[1]), int(sys.argv[2]))
