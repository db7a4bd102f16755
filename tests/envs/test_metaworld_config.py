"""Hydra option files: generated from the task table and kept in step with it; a task and its hyphenated alias compose
to the canonical id; `list` and the suite's `tasks` show all fifty; the task sweeps name the right tasks."""

from __future__ import annotations

import pytest

from bird.config.load import compose
from bird.envs.__main__ import main
from bird.envs.demos import available_envs
from bird.envs.metaworld.conf import option_files, stale_files
from bird.envs.metaworld.tasks import MT10, TASKS
from bird.registry import get
from bird.sweeps import cells

# MT10 and its aliases, and one new task with its alias: every option file is generated the same way (the files are
# checked against the generator below), so composing these stands for composing all 92
COMPOSED = [*MT10, "faucet_open"]
NAMES = [(t, t) for t in COMPOSED] + [(t.replace("_", "-"), t) for t in COMPOSED if "_" in t]
# PRM4RL App. D.1 Table 3, written out here from the paper (hyphenated, as it names them)
PRM4RL_TASKS = ["button-press", "door-close", "drawer-close", "faucet-open", "window-open", "sweep-into", "pick-place",
                "pick-out-of-hole", "sweep", "push"]


@pytest.mark.parametrize("name, task", NAMES)
def test_env_option_composes_to_the_canonical_id_with_horizon_500(name, task):
    env = compose([f"env=metaworld/{name}", "budget=smoke"]).env
    assert env.id == f"metaworld/{task}" and env.horizon == 500 and env.description == TASKS[task].description


def test_the_option_files_are_the_generated_ones_for_all_fifty_tasks():
    assert stale_files() == []
    assert available_envs("metaworld") == [f"metaworld/{t}" for t in sorted(TASKS)]
    assert len(TASKS) == 50 and len(option_files()) == 50 + sum("_" in t for t in TASKS)


def test_an_edited_missing_or_extra_option_file_is_out_of_step(tmp_path):
    for name, text in option_files().items():
        (tmp_path / name).write_text(text)
    assert stale_files(tmp_path) == []
    (tmp_path / "push.yaml").write_text(option_files()["push.yaml"].replace("puck", "block"))
    (tmp_path / "reach.yaml").unlink()
    (tmp_path / "mine.yaml").write_text("id: metaworld/mine\n")
    assert stale_files(tmp_path) == ["mine.yaml", "push.yaml", "reach.yaml"]


def test_the_suite_names_every_task_the_catalogue_lists():
    suite = get("suite", "metaworld")
    assert suite.tasks() == tuple(sorted(TASKS))
    assert [f"metaworld/{t}" for t in suite.tasks()] == available_envs("metaworld")
    assert all(suite.task_names(t) == t for t in suite.tasks())


def test_unknown_env_option_fails_at_compose_time():
    with pytest.raises(Exception, match="env/metaworld/nosuch"):
        compose(["env=metaworld/nosuch"])


def test_list_prints_every_metaworld_task_with_suite_horizon_and_score(capsys):
    main(["list"])
    out = capsys.readouterr().out
    blocks = {b.split(maxsplit=1)[0]: b for b in out.split("\n\n") if b.strip()}
    for task in TASKS:
        block = blocks[f"metaworld/{task}"]
        assert "(suite metaworld, horizon 500)" in block and "success flag: yes" in block and "score: " in block


@pytest.mark.parametrize(("sweep", "tasks"), [("mt10", list(MT10)), ("mt50", sorted(TASKS)),
                                              ("prm4rl_tasks", [t.replace("-", "_") for t in PRM4RL_TASKS])])
def test_the_task_sweeps_run_one_cell_per_task_of_their_set(sweep, tasks):
    grid = cells(sweep, ["method=prm4rl"])
    assert [c[0] for c in grid] == [f"env=metaworld/{t}" for t in tasks]
    assert all(c[1:] == ["method=prm4rl"] for c in grid)


def test_check_runs_a_task_at_a_shorter_horizon_when_asked(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check", "metaworld/hammer", "horizon=20", "episodes=1"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "metaworld/hammer: ok" in out and "mean length 20 steps" in out


def test_the_prm4rl_task_sweep_composes_prm4rl_on_all_ten_tasks_at_the_smoke_budget():
    from bird.sweeps import estimate

    est = estimate("prm4rl_tasks", ["method=prm4rl", "budget=smoke"])  # composes and validates every cell's config
    assert est["cells"] == 10 and est["by_method"]["prm4rl × metaworld"]["cells"] == 10
