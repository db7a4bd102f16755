"""Hydra option files: every task and its hyphenated alias compose to the canonical id; `list` shows all ten."""

from __future__ import annotations

import pytest

from bird.config.load import compose
from bird.envs.__main__ import main
from bird.envs.metaworld.tasks import TASKS

NAMES = [(t, t) for t in sorted(TASKS)] + [(t.replace("_", "-"), t) for t in sorted(TASKS) if "_" in t]


@pytest.mark.parametrize("name, task", NAMES)
def test_env_option_composes_to_the_canonical_id_with_horizon_500(name, task):
    env = compose([f"env=metaworld/{name}", "budget=smoke"]).env
    assert env.id == f"metaworld/{task}" and env.horizon == 500 and env.description


def test_unknown_env_option_fails_at_compose_time():
    with pytest.raises(Exception, match="env/metaworld/nosuch"):
        compose(["env=metaworld/nosuch"])


def test_list_prints_every_metaworld_task_with_suite_horizon_and_score(capsys):
    main(["list"])
    out = capsys.readouterr().out
    for task in TASKS:
        line = next(ln for ln in out.splitlines() if ln.startswith(f"metaworld/{task} "))
        assert " metaworld " in line and " 500 " in line and "success flag" in line
