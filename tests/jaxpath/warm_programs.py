"""Compile, into the session's JAX cache (BIRD_JAX_CACHE), what the JAX path tests would otherwise compile one after
another on the suite's critical path (minutes on a CPU): `training`, the training program at the tests' settings
(TINY), two trainings wide and one wide; `envs`, the leak audit's random episodes of every Brax task (tests/
prompt_rehearsal.py, in the session's shared folder BIRD_TEST_SHARED), and the task checker's report on each
(tests/task_checks.py).

Runs beside the suite (tests/background.py, jobs "jax_programs" and "brax_envs"); the tests that train wait for
"jax_programs" and then load its programs from the cache. By hand:
    BIRD_JAX_CACHE=/tmp/cache python tests/jaxpath/warm_programs.py training OUT_DIR   (or: ... envs)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from jax_programs import FORWARD, TINY, UPRIGHT  # noqa: E402
from smoke_overrides import SMOKE  # noqa: E402


def _train(cfg, jobs: list) -> None:
    """Train `jobs` as the pool does (one group), failing loudly."""
    from bird.executors.jobs import call_learner, prepare

    groups, failed = prepare(cfg.train.learner, jobs)
    results = call_learner(cfg.train.learner, groups[0], lambda *_: None)
    if failed or not all(r.ok for r in results):
        raise SystemExit(f"warm-up training failed: {failed} {[r.failure for r in results]}")


def training(out: Path) -> None:
    """The training programs the JAX path tests train (job "jax_programs": those tests wait for it)."""
    from bird.config.load import compose
    from bird.learners.job import make_job

    cfg = compose([*SMOKE, *TINY])  # = the jax_cfg fixture (tests/jaxpath/conftest.py)
    for codes in ([FORWARD, UPRIGHT], [FORWARD]):  # 2 wide (candidates together), 1 wide (alone, final retrains)
        _train(cfg, [make_job(cfg, f"c{i}", code, i, 192, out / f"k{len(codes)}" / f"c{i}")
                     for i, code in enumerate(codes)])
        print(f"compiled the training program {len(codes)} wide", flush=True)


def envs() -> None:
    """The leak audit's random episodes of every Brax task (job "brax_envs"), in the session's shared folder: most of
    their time is tracing and compiling the gym view's reset and step."""
    from prompt_rehearsal import REHEARSAL_HORIZON, save_random_experience
    from task_checks import save_check_report

    from bird.envs.brax.tasks import TASKS

    for task in sorted(TASKS):
        save_random_experience(f"brax/{task}", REHEARSAL_HORIZON)
        print(f"recorded brax/{task}'s random episodes", flush=True)
        save_check_report(f"brax/{task}")  # the task checker, on the programs just traced (tests/task_checks.py)
        print(f"checked brax/{task}", flush=True)


if __name__ == "__main__":
    from bird.jax_cache import enable_compilation_cache

    enable_compilation_cache()  # before anything compiles
    if sys.argv[1:2] == ["training"] and len(sys.argv) == 3:
        training(Path(sys.argv[2]))
    elif sys.argv[1:] == ["envs"]:
        envs()
    else:
        raise SystemExit(f"usage: {sys.argv[0]} training OUT_DIR | envs (got {sys.argv[1:]})")
