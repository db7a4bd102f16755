"""End to end on the GPU path (run here on the CPU): searches on a Brax task (TINY) with train.learner=jax_ppo."""

import json
import math
import subprocess
import sys

import pytest
from jax_programs import FORWARD, TINY

pytestmark = pytest.mark.background("jax_programs")  # the training programs, compiled beside the suite


@pytest.mark.slow
@pytest.mark.parametrize("method", ["eureka", "zeroshot"])
def test_search_on_brax_with_jax_ppo_writes_a_finite_returned_score(compose_cfg, jax_programs_compiled, tmp_path, method):
    from bird.loop import search

    cfg = compose_cfg(f"method={method}", *TINY)
    result = search(cfg, tmp_path / "run")
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["returned_score"] == result["returned_score"] and math.isfinite(result["returned_score"])
    assert result["suite"] == "brax" and result["n_failed"] == 0
    cands = sorted((tmp_path / "run" / "candidates").iterdir())
    assert len(cands) == result["plan"]["n_candidates"] * result["plan"]["iterations"] == (1 if method == "zeroshot" else 4)
    for cand in cands:
        assert "import jax.numpy as jnp" in (cand / "reward.py").read_text()
        assert (cand / "curve.csv").read_text().count("\n") == cfg.budget.n_checkpoints + 1
        assert json.loads((cand / "jax_ppo.json").read_text())["settings"]["num_envs"] == 4
    if method == "eureka":  # the feedback shows the program's components, as on the CPU path
        feedback = (tmp_path / "run" / "candidates" / "it1-c0" / "feedback.txt").read_text()
        assert "task_score" in feedback


@pytest.mark.parametrize("method, missing", [
    ("card", "generate.env_representation"), ("regot", "judge.mode=vlm"), ("grace", "reward.contract"),
    ("prm4rl", "reward.contract"),
])
def test_methods_that_need_what_brax_lacks_fail_before_any_work(method, missing):
    from bird.config.load import ConfigError, compose

    with pytest.raises(ConfigError, match="invalid config") as err:
        compose([f"method={method}", "env=brax/hopper", "train.learner=jax_ppo"])
    assert missing in str(err.value)


def test_check_cli_traces_a_jax_program_for_a_brax_task(jax_programs_compiled, tmp_path):
    path = tmp_path / "reward.py"
    path.write_text(FORWARD)
    out = subprocess.run([sys.executable, "-m", "bird.reward", "check", str(path), "env=brax/inverted_pendulum",
                          "verify.smoke_steps=8"], capture_output=True, text=True, timeout=900)
    verdict = json.loads(out.stdout)
    assert out.returncode == 0 and verdict["valid"] and verdict["language"] == "jax"
    assert verdict["components"] == ["forward", "ctrl"]


def test_early_stop_is_refused_with_jax_ppo_and_checkpoint_selection_is_not():
    from bird.config.load import ConfigError, compose

    with pytest.raises(ConfigError, match="train.early_stop"):
        compose(["env=brax/hopper", "train.learner=jax_ppo", "train.early_stop=plateau"])
    cfg = compose(["env=brax/hopper", "train.learner=jax_ppo", "train.checkpoint_selection=best_own_return"])
    assert cfg.train.checkpoint_selection == "best_own_return"
