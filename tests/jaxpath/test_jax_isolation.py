"""A reward program's Python never runs in the trainer: the pool sends exported bytes, never source, the trainer's
host (the pool's worker) ends up holding no module, function or code object of the program, and the trainer itself
is a separate process behind every OS layer (recorded in each job's jax_ppo.json)."""

import gc
import json
import pickle
import sys
import types

import pytest
from jax_programs import FORWARD, UPRIGHT

from bird.executors.local import TrainPool

pytestmark = pytest.mark.background("jax_programs")  # the training programs, compiled beside the suite

_KEEP: list = []


def trainer_view() -> dict:
    """Runs in the pool's worker process: what of a reward program's Python is there."""
    gc.collect()
    from_program = [o for o in gc.get_objects() if isinstance(o, types.FunctionType)
                    and o.__code__.co_filename in ("<reward>", "<program>")]
    modules = sorted(m for m in sys.modules if m in ("reward_program", "bird_jax_export"))
    return {"functions": len(from_program), "modules": modules}


def run_program_in_process(code: str) -> None:
    """The positive control: what a trainer that executed program source would hold."""
    ns: dict = {}
    exec(compile(code, "<program>", "exec"), ns)  # noqa: S102 - test-only, trusted program text
    _KEEP.append(ns)


def test_trainer_receives_exported_bytes_and_never_runs_program_python(jax_cfg, tmp_path):
    from bird.learners.job import make_job

    jobs = [make_job(jax_cfg, f"c{i}", code, i, 192, tmp_path / f"c{i}") for i, code in enumerate((FORWARD, UPRIGHT))]
    pool = TrainPool(1)
    sent: list = []
    executor = pool._procs.executor
    submit = executor.submit
    executor.submit = lambda fn, *args: (sent.append(args), submit(fn, *args))[1]
    try:
        results = pool.run("jax_ppo", jobs)
        assert all(r.ok for r in results), [r.failure for r in results]
        (learner, shipped), = sent
        assert learner == "jax_ppo" and len(shipped) == 2
        for job in shipped:
            assert job.code is None and isinstance(job.program.hlo, bytes) and len(job.program.hlo) > 0
            blob = pickle.dumps(job)
            for source in (FORWARD, UPRIGHT):
                assert not [ln for ln in source.splitlines() if len(ln.strip()) > 8 and ln.strip().encode() in blob]
        for job in shipped:
            record = json.loads((tmp_path / job.candidate_id / "jax_ppo.json").read_text())
            assert record["isolation"] and all(record["isolation"].values()), record["isolation"]
            assert record["devices"] and record["program"] == job.program.digest
        assert submit(trainer_view).result() == {"functions": 0, "modules": []}
        submit(run_program_in_process, FORWARD).result()  # positive control: the same check sees executed source
        assert submit(trainer_view).result()["functions"] == 1
    finally:
        executor.submit = submit
        pool._procs.shutdown()  # not kept warm: the positive control ran program source in this worker
