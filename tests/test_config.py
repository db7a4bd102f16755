import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bird.config.load import CONF_DIR, ConfigError, compose
from bird.diff import method_diff

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bird", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_invalid_value_fails_fast_naming_the_key():
    proc = _cli("generate.n_candidates=-1")
    assert proc.returncode != 0
    assert "generate.n_candidates" in proc.stderr
    assert "candidate_generated" not in proc.stdout + proc.stderr


def test_unknown_key_fails_naming_the_key():
    with pytest.raises(Exception, match="nosuchkey"):
        compose(["generate.nosuchkey=1"])


@pytest.mark.parametrize("override, key", [("+nosuchkey=1", "nosuchkey"), ("+train.total_stpes=9", "train.total_stpes"),
                                           ("++generate.temprature=0.5", "generate.temprature")])
def test_a_key_added_with_a_plus_that_the_schema_lacks_fails_naming_it(override, key):
    """Hydra's `+` adds a key its struct mode would refuse; the typed config would carry it unread."""
    with pytest.raises(ConfigError, match=rf"unknown key '{key}'"):
        compose([override])


def test_keys_of_untyped_mappings_are_any_keys():
    cfg = compose(["+train.jax.tasks.my_task.num_envs=8"])
    assert cfg.train.jax.tasks["my_task"] == {"num_envs": 8}


def test_unknown_group_option_fails_listing_the_options():
    proc = _cli("method=nosuch")
    assert proc.returncode != 0
    assert "method/nosuch" in proc.stderr and "eureka" in proc.stderr


def test_unregistered_component_name_is_rejected():
    with pytest.raises(ConfigError, match="select.rule"):
        compose(["select.rule=nosuch"])


def test_the_truncation_re_ask_limits_are_checked():
    with pytest.raises(ConfigError) as err:
        compose(["generate.truncation_retries=-1", "generate.max_tokens=4096", "generate.truncation_max_tokens=2048"])
    assert "generate.truncation_retries=-1: must be >= 0" in str(err.value)
    assert "generate.truncation_max_tokens=2048: must be >= generate.max_tokens=4096 or null" in str(err.value)
    assert compose(["generate.truncation_max_tokens=8192"]).generate.truncation_max_tokens == 8192


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        compose(["loop.iterations=0", "budget.env_steps=0", "llm.cache=sometimes"])
    for key in ("loop.iterations", "budget.env_steps", "llm.cache"):
        assert key in str(err.value)


def test_cfg_job_prints_the_resolved_config():
    proc = _cli("--cfg", "job")
    assert proc.returncode == 0
    assert "n_candidates: 8" in proc.stdout and "id: mujoco/hopper" in proc.stdout


def _options(group: str) -> list[str]:
    folder = CONF_DIR / group
    return sorted(str(p.relative_to(folder).with_suffix("")) for p in folder.rglob("*.yaml"))


SUITE_ENV = {"metaworld": "metaworld/push", "mujoco": "mujoco/hopper"}
# methods that need what only Meta-World's tasks offer: demonstrations (grace), its abstraction and success flag
METAWORLD_ONLY = ("grace", "prm4rl", "regot")


@pytest.mark.parametrize("group", ["method", "env", "llm", "trainer", "budget"])
def test_every_option_of_every_group_composes(group):
    for option in _options(group):
        if group == "llm" and option != "offline":
            continue  # API backends need a key at start-up, not at compose time; tested in tests/llm
        suites = yaml.safe_load((CONF_DIR / group / f"{option}.yaml").read_text()).get("generate", {}).get("suites") \
            if group == "method" else None
        if group == "method" and option in METAWORLD_ONLY:  # what only Meta-World's tasks offer
            suites = ["metaworld"]
        env = [f"env={SUITE_ENV[suites[0]]}"] if suites else []  # a method written for another suite than the default's
        # a task without a reference reward (a task file's reference_reward: none): the default method's native
        # signal is refused there, so it composes with the benchmark score shown and ranked
        signals = ["feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score"] \
            if group == "env" and "reference_reward: none" in (CONF_DIR / group / f"{option}.yaml").read_text() else []
        cfg = compose([f"{group}={option}", *env, *signals])
        assert_option_applied(cfg, CONF_DIR / group / f"{option}.yaml")


def test_demonstrations_from_a_source_the_task_lacks_fail_at_config_time():
    """GRACE learns from expert demonstrations: a scripted expert's (Meta-World), else a PPO expert's trained on the
    reference reward (MuJoCo). A task with neither, or a source it lacks asked for by name, is refused before anything
    runs, saying what is missing, instead of failing (or crashing) once the search has started."""
    with pytest.raises(ConfigError, match=r"demos.enabled=true: task gym/hopper_hop_in_place names no source of expert "
                                          r"demonstrations: it has no reference reward .* env.task.expert"):
        compose(["method=grace", "env=gym/hopper_hop_in_place"])
    with pytest.raises(ConfigError, match=r"demos.expert=scripted: .*suite 'mujoco' has no scripted expert policy for "
                                          r"mujoco/swimmer; suites with one: \['babyai', 'metaworld'\]; or set demos.expert=ppo"):
        compose(["method=grace", "env=mujoco/swimmer", "demos.expert=scripted"])
    with pytest.raises(ConfigError, match=r"demos.expert='teacher': allowed: \['auto', 'scripted', 'ppo'\]"):
        compose(["method=grace", "env=metaworld/reach", "demos.expert=teacher"])
    assert compose(["method=grace", "env=metaworld/reach"]).demos.enabled  # a scripted expert
    assert compose(["method=grace", "env=mujoco/walker2d"]).demos.expert == "auto"  # a PPO expert on the reference
    proc = _cli("method=grace", "env=gym/hopper_hop_in_place", "run.progress=false")
    assert proc.returncode != 0 and "names no source of expert demonstrations" in proc.stderr
    assert "search_started" not in proc.stdout + proc.stderr


def test_each_suites_scripted_expert_flag_matches_its_adapters():
    """The flag the check reads (envs/registry.py) against the adapters themselves, so it cannot drift."""
    from bird.envs.demos import available_envs, env_config
    from bird.envs.registry import make_adapter
    from bird.registry import get, names

    for suite in names("suite"):
        adapter = make_adapter(env_config(available_envs(suite)[0]))
        assert get("suite", suite).scripted_expert == hasattr(adapter, "expert_policy"), suite


def _leaves(node, prefix=""):
    """(dotted key, value) of every leaf of a YAML mapping."""
    for key, value in node.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _option_values(path: Path) -> dict:
    """Dotted key -> value an option file sets, its parents' first (a file's own values override what it extends)."""
    import yaml

    text = path.read_text()
    package = text.splitlines()[0].removeprefix("# @package ").strip()
    prefix = "" if package == "_global_" else package + "."
    node = yaml.safe_load(text) or {}
    values: dict = {}
    for parent in node.get("defaults", []):  # an alias or a chain step names the file it extends
        if isinstance(parent, str) and parent.startswith("/"):
            values.update(_option_values(CONF_DIR / f"{parent[1:]}.yaml"))
    leaves = {prefix + k: v for k, v in _leaves(node) if k != "defaults"}
    assert leaves or node.get("defaults"), path
    return {**values, **leaves}


def assert_option_applied(cfg, path: Path) -> None:
    """Every value the option file sets (under its `# @package` target, or inherits) is the composed config's value."""
    for key, value in _option_values(path).items():
        if isinstance(value, str) and "${" in value:
            continue  # an interpolation (e.g. ${if_matched:...}): resolved by the budget, not a literal value
        got = cfg
        for part in key.split("."):  # attributes of the typed config, items of a dict value (tree.actions)
            got = got[part] if isinstance(got, dict) else getattr(got, part)
        got = list(got) if isinstance(got, tuple) else got
        if isinstance(value, list) and value and isinstance(value[0], dict):  # a list of records (a task file's fields)
            got = [{k: getattr(g, k) for k in v} for g, v in zip(got, value, strict=True)]
        assert got == value, (path.name, key, got, value)


def test_every_choice_composes_with_its_values_applied():
    options = _options("choice")
    assert len(options) >= 5
    for option in options:
        try:
            cfg = compose([f"+choice={option}"])
        except ConfigError:  # judge-score choices apply only where a judge scores (RDA and its recipes)
            cfg = compose(["method=rda", f"+choice={option}"])
        assert_option_applied(cfg, CONF_DIR / "choice" / f"{option}.yaml")


def test_diff_prints_exactly_the_keys_that_differ():
    diff = method_diff("eureka", "zeroshot")
    assert set(diff) == {"method", "generate.n_candidates", "generate.history", "loop.iterations",
                         "feedback.show_score", "feedback.score_shown", "feedback.fitness", "generate.parent",
                         "substitutes"}  # Eureka's labelled fitness statistic
    assert diff["generate.n_candidates"] == (8, 1)
    proc = subprocess.run([sys.executable, "-m", "bird.diff", "eureka", "zeroshot"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    assert len(proc.stdout.strip().splitlines()) == 1 + len(diff)


def test_budget_caps_derive_k_and_t_once():
    from bird.loop import make_plan

    plan = make_plan(compose(["budget=smoke"]))
    assert (plan.n_candidates, plan.iterations) == (2, 2)
    plan = make_plan(compose(["budget=paper"]))
    assert (plan.n_candidates, plan.iterations, plan.env_steps) == (8, 5, 1_000_000)
