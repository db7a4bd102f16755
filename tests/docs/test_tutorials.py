"""Every tutorial of docs/tutorials/ is run as a reader runs it (tests/tutorial_runner.py): its files written, its
commands run in order from one folder, the output it shows checked loosely against what they printed.

The tutorials share one folder, as a reader who follows them in turn does: tutorial 8 packs tutorial 2's sweep, 9
rates its clips. A search runs at tutorial 1's smoke budget with shorter trainings (TINY); a tutorial 6 run talks to
a local server speaking OpenAI's wire (OPENAI_BASE_URL), with a throwaway key."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import background
import pytest
import tutorial_runner as tr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "jaxpath"))

from jax_programs import TINY as TINY_JAX  # noqa: E402

TINY = "budget.env_steps=256 budget.final_env_steps=256"
# the JAX path's test sizes (tests/jaxpath/jax_programs.py), whose programs the background job jax_programs compiles
JAX_TINY = " ".join([*TINY_JAX[2:], "budget.env_steps=192", "budget.final_env_steps=192"])
# a regex on a command -> what the test appends: searches (and the sweeps bird.ablate launches) train shorter
EXTRA = {r"^python -m bird (?!.*(--help|--plan|--cfg|jax_ppo))": TINY, r"^python -m bird\.ablate .*--run": TINY,
         r"train\.learner=jax_ppo": JAX_TINY}
TUTORIALS = sorted(p.name for p in tr.TUTORIALS.glob("[0-9][0-9]_*.md"))
NEEDS = {"08_publish.md": ["02_compare_methods.md"], "09_watch_and_rate.md": ["01_first_search.md",
                                                                           "02_compare_methods.md"]}
SLOW = {"07_at_scale.md", "08_publish.md"}
WAITS = {"07_at_scale.md": "jax_programs"}  # its JAX search reads the programs that job compiled
# what a reader of tutorial 6 gets from a model: one reward program for Pendulum's fields
ANSWER = '''Here is a reward.

```python
import numpy as np


def compute_reward(obs, action, next_obs, info):
    upright = next_obs["cos_theta"]
    spin = -0.1 * np.square(next_obs["theta_dot"])
    effort = -0.001 * np.sum(np.square(action), axis=-1)
    return upright + spin + effort, {"upright": upright, "spin": spin, "effort": effort}
```
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The reader's folder, and the tutorials run in it so far (name -> tr.Ran)."""
    return tmp_path_factory.mktemp("tutorials"), {}


def _run(workspace, name: str, env: dict[str, str] | None = None) -> tr.Ran:
    folder, ran = workspace
    for needed in NEEDS.get(name, []):
        if needed not in ran:
            _run(workspace, needed)
    if name not in ran:
        full = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **(env or {})}
        full.pop("BIRD_CONFIG_PATH", None)
        ran[name] = tr.run(tr.TUTORIALS / name, folder, full, EXTRA, timeout=1500)
    return ran[name]


def _check(done: tr.Ran) -> None:
    assert done.failed is None, done.failed
    for command, output in zip(done.commands, done.outputs, strict=True):
        missing = tr.unmatched(command.shown, output)
        assert not missing, f"`{command.line}` did not print {missing}; it printed:\n{output[-3000:]}"


def _marks(name: str) -> list:
    marks = [pytest.mark.slow] if name in SLOW else []
    return marks + ([pytest.mark.background(WAITS[name])] if name in WAITS else [])


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in TUTORIALS])
def test_tutorial_runs_as_written_and_prints_what_it_shows(workspace, name):
    if name in WAITS:
        background.result(WAITS[name])
    if name == "06_real_llm.md":
        from llm.fake_provider import ProviderServer

        with ProviderServer("openai", ANSWER) as server:
            _check(_run(workspace, name, {"OPENAI_BASE_URL": server.base_url}))
        assert server.requests, "tutorial 6 never reached the model's server"
        return
    _check(_run(workspace, name))


def test_every_tutorial_command_is_in_a_block_a_test_runs():
    """A shell command outside a ```console block would not run here; a tutorial without commands is not one."""
    problems = {p.name: tr.check_blocks(p.read_text()) for p in tr.TUTORIALS.glob("*.md")}
    assert not any(problems.values()), problems
    assert len(TUTORIALS) == 9 and all(tr.blocks(p.read_text()) for p in tr.TUTORIALS.glob("[0-9]*.md"))
    leaky = "```bash\npython -m bird\n```\n```console\nno command\n```\n"
    assert len(tr.check_blocks(leaky)) == 2  # positive control


def test_shown_output_is_matched_loosely_but_in_order():
    shown = ["eureka on gym/pendulum seed 0: completed · ... returned_score 0.209", "wall 36 s"]
    assert not tr.unmatched(shown, "x\neureka on gym/pendulum seed 0: completed · tied · returned_score -1.5e-3\n"
                                   "wall 12 s")
    assert tr.unmatched(shown, "wall 12 s\neureka on gym/pendulum seed 0: completed · returned_score 0.2") == [
        "wall 36 s"]  # out of order
    assert tr.unmatched(["returned_score 0.209"], "returned_scores 0.209") == ["returned_score 0.209"]
