"""The isolated trainer on the other executor (Ray), end to end: export, inspection, the trainer process, results."""

import json

import pytest
from jax_programs import FORWARD, UPRIGHT

pytestmark = pytest.mark.slow


def test_jax_ppo_on_ray_trains_in_the_isolated_trainer(jax_cfg, tmp_path):
    ray = pytest.importorskip("ray")
    from dataclasses import replace

    from bird.executors import make_executor
    from bird.learners.job import make_job

    cfg = replace(jax_cfg, train=replace(jax_cfg.train, executor="ray"))
    ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False, log_to_driver=False)
    try:
        executor = make_executor(cfg, 2)
        jobs = [make_job(cfg, f"c{i}", code, i, 192, tmp_path / f"c{i}") for i, code in enumerate((FORWARD, UPRIGHT))]
        results = executor.run("jax_ppo", jobs)  # 2 wide: the session's cache holds this program
        executor.close()
    finally:
        ray.shutdown()
    assert [r.candidate_id for r in results] == ["c0", "c1"] and all(r.ok for r in results), results
    for job in jobs:
        record = json.loads((tmp_path / job.candidate_id / "jax_ppo.json").read_text())
        assert record["isolation"] and all(record["isolation"].values()), record["isolation"]
