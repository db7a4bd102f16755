"""Compile, into the session's JAX cache (BIRD_JAX_CACHE), what the JAX path tests would otherwise compile one after
another on the suite's critical path (minutes on a CPU): the training program at the tests' settings (TINY), two
trainings wide and one wide, and the gym view's reset and step of every Brax task (the leak audit's random episodes).

Runs beside the suite (tests/background.py, job "jax_programs"); the tests that train wait for it and then load these
programs from the cache. By hand: BIRD_JAX_CACHE=/tmp/cache python tests/jaxpath/warm_programs.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from jax_programs import FORWARD, TINY, UPRIGHT  # noqa: E402
from smoke_overrides import SMOKE  # noqa: E402


def main(out: Path) -> None:
    from bird.jax_cache import enable_compilation_cache

    enable_compilation_cache()
    import numpy as np

    from bird.config.load import compose
    from bird.config.schema import EnvConfig
    from bird.envs.brax.tasks import TASKS
    from bird.envs.registry import make_adapter
    from bird.executors.jobs import call_learner, prepare
    from bird.learners.job import make_job

    cfg = compose([*SMOKE, *TINY])  # = the jax_cfg fixture (tests/jaxpath/conftest.py)
    for codes in ([FORWARD, UPRIGHT], [FORWARD]):  # 2 wide (candidates together), 1 wide (alone, final retrains)
        jobs = [make_job(cfg, f"c{i}", code, i, 192, out / f"k{len(codes)}" / f"c{i}") for i, code in enumerate(codes)]
        groups, failed = prepare(cfg.train.learner, jobs)
        results = call_learner(cfg.train.learner, groups[0], lambda *_: None)
        if failed or not all(r.ok for r in results):
            raise SystemExit(f"warm-up training failed: {failed} {[r.failure for r in results]}")
        print(f"compiled the training program {len(codes)} wide", flush=True)
    for task in sorted(TASKS):
        env = make_adapter(EnvConfig(id=f"brax/{task}", description="warm-up")).make_env()
        env.reset(seed=0)
        env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        print(f"compiled brax/{task} reset and step", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
