"""Prompt-level leak audit (bird/leaks.py) over every method × every task of every suite: every prompt kind a method
sends (initial, feedback/mutation, decomposition, judge, goal identification) and every feedback text it renders,
without training. Each check has a positive control: a deliberately leaky input it must catch.

The forty Meta-World tasks beyond MT10 are audited more cheaply (test_no_first_iteration_prompt_leaks_on_the_mt50_tasks):
every method's prompts of its first iteration, its config composed once and the task swapped in. What a task adds to a
prompt (its text, fields, views, demonstrations, rollouts) is there in the first iteration already; what later prompt
kinds add (feedback formats, mutation, judge and critic templates) is the method's own, and the full audit renders it
for every method on the ten MT10 tasks of the same suite."""

from __future__ import annotations

import re

import pytest
from prompt_rehearsal import REFERENCE_SENTINEL, REHEARSAL_HORIZON, Rehearsal, rehearse

from bird.config.load import CONF_DIR
from bird.envs.demos import available_envs
from bird.envs.metaworld.tasks import MT10
from bird.leaks import compared_numbers, eval_task_mentions, find_leaks, hidden_facts
from bird.registry import declared

METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))
# Tasks added by issue 37 (BIRD's Gym tasks, GRACE's Gym MuJoCo, classic control) are audited with the methods that
# render every kind of task content a prompt carries: the full source and the class abstraction, described and bare
# fields, the eureka, process, subtask-judge and misscored-demos feedback, a decomposition (VIEW_METHODS); each view
# of each of them is also checked by `python -m bird.envs check` (tests/envs/test_task_files.py). Every method on every
# such task would add ~130 rehearsals (~5 minutes on 2 cores).
VIEW_AUDITED = {"gym/acrobot", "gym/half_cheetah_backward", "gym/half_cheetah_target_speed", "gym/mountain_car_continuous",
                "gym/reacher_hold", "gym/reacher_reach", "gym/swimmer_heading", "mujoco/ant", "mujoco/humanoid",
                "mujoco/walker2d"}
VIEW_METHODS = ("card", "era_u", "eureka", "grace")
# Meta-World beyond MT10: audited by test_no_first_iteration_prompt_leaks_on_the_mt50_tasks (module docstring)
MT50_ONLY = [t for t in available_envs("metaworld") if t.partition("/")[2] not in MT10]
TASKS = [t for t in available_envs() if t not in MT50_ONLY]
CASES = [(m, t) for t in TASKS for m in METHODS if t not in VIEW_AUDITED or m in VIEW_METHODS]
# demos.expert=scripted: a method that learns from demonstrations is audited where a task has a scripted expert; its
# prompts with a PPO expert's demonstrations are audited once (test_grace_with_a_ppo_experts_demos_leaks_nothing)
REHEARSAL = ["run.progress=false", f"env.horizon={REHEARSAL_HORIZON}", "budget.max_candidates=1", "verify.checks=[static]",
             "judge.mode=state_text", "alignment.iterations=20", "demos.n_expert=2", "demos.n_negative=2",
             "demos.max_train=2", "demos.expert=scripted"]
# a method that cannot run on a suite must say so before anything is sent (the brax suite: when the config loads)
REFUSALS = (r"not available for suite|no scripted expert policy|has no such view of its tasks|needs scripted expert"
            r"|needs rendered frames|needs reward\.|is written for suites|needs a success flag")
# a task with no reference reward refuses a native signal: the method is audited as a user would run it there, with
# the benchmark score ranked and shown
NO_REFERENCE = ("feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score")

# The RE-GoT few-shot example bird shipped before issue 12: MT10 push, its field names and push's 0.05 threshold.
LEAKY_EXAMPLE = """Example task: Push the puck to the goal position.
Graph:
{"nodes": [{"id": "n0", "status": "gripper away from the puck; puck at its start position"},
           {"id": "n1", "status": "gripper touching the side of the puck away from the goal"},
           {"id": "n2", "status": "puck at the goal position"}],
 "edges": [{"src": "n0", "dst": "n1", "behavior": "move the gripper behind the puck", "substep_type": "reward",
            "success_condition": "norm(hand_pos - puck_pos) < 0.05", "alt_rank": 0},
           {"src": "n1", "dst": "n2", "behavior": "push the puck along the table to the goal", "substep_type": "reward",
            "success_condition": "norm(puck_pos - goal_pos) < 0.05", "alt_rank": 0}],
 "start": "n0", "goal": "n2"}"""


def _strip(text: str, authored: list[str]) -> str:
    for piece in sorted((a for a in authored if a.strip()), key=len, reverse=True):
        text = text.replace(piece, " ")
    return text


def shows_reference_return(cfg) -> bool:
    """The method's own feedback shows the reference-reward return: its task_score is the suite's native signal, as
    BIRD's matched runs show it (Eureka, RF-Agent, R*, REvolve on MuJoCo and Brax; feedback.score_shown)."""
    from bird.components.fitness import resolve_fitness

    return cfg.feedback.show_score and resolve_fitness(cfg.feedback.score_shown, cfg.env.id.split("/")[0]) == \
        "reference_return"


def findings(r: Rehearsal, cfg) -> list[str]:
    """Every leak in what the rehearsal showed (generator-authored text shown back to it is left out). A method that
    shows bare fields (GRACE, §5.1: no in-context information about the environment) must show no field description
    and no task text either."""
    facts, out = hidden_facts(cfg.env.id), []
    allowed_reference = shows_reference_return(cfg)
    texts = [(f"{req.purpose} request", "\n".join(m.content for m in req.messages)) for req, _ in r.calls]
    texts += [("feedback text", text) for text in r.feedback]
    for where, text in texts:
        shown = _strip(text, r.authored)
        out += [f"{where}: {leak}" for leak in find_leaks(shown, facts)]
        if f"{REFERENCE_SENTINEL}" in shown and not allowed_reference:
            out.append(f"{where}: shows the reference-reward return {REFERENCE_SENTINEL}")
        if cfg.generate.field_view == "bare":
            out += [f"{where}: shows the description of {f.name}" for f in r.spec.obs_index.fields
                    if f.description and f.description in shown]
            out += [f"{where}: shows the task text" for _ in [0] if cfg.env.description in shown]
    for req, _ in r.calls:
        if cfg.generate.field_view == "bare" and any(set(f) - {"name", "size", "unit"} for f in req.context.get("obs_fields", [])):
            out.append(f"{req.purpose} request: its context carries more than field names, shapes and units")
        for i, example in enumerate(req.context.get("examples", [])):
            out += [f"few-shot example {i + 1} names evaluation task {t}" for t in eval_task_mentions(example)]
            out += [f"few-shot example {i + 1} compares with a number: {shown!r}"
                    for shown, _ in compared_numbers(example)]
    return out


def _operator_overrides(cfg) -> list[str]:
    """Enough samples per iteration that every LLM operator a method's sampling plan deals is rendered: one per tree
    action (the counts rescale to one each), three for evolutionary operators (mutation and crossover)."""
    if cfg.tree.actions:
        return [f"budget.max_candidates={len(cfg.tree.actions)}"]
    return ["budget.max_candidates=3"] if cfg.generate.crossover_rate > 0 else []


_OPERATORS: dict[str, list[str]] = {}  # method -> _operator_overrides, from its first task (one compose, not two)


def _expected_purposes(cfg, r: Rehearsal) -> set[str]:
    from bird.config.needs import needs_judgement

    out = {"reward"}
    iterates = min(cfg.loop.iterations, cfg.budget.max_iterations or cfg.loop.iterations) > 1
    if cfg.decompose.kind != "none":
        out.add("decompose")
    if declared("feedback_format", cfg.feedback.format).needs_judge:
        out.add("judge")
    if iterates and cfg.generate.parent != "none":
        out.add("mutation")
    for purpose, used in (("judge_score", needs_judgement(cfg)), ("summary", cfg.feedback.summarisation != "none"),
                          ("thought_alignment", cfg.feedback.thought_alignment),
                          ("subtask_revision", cfg.decompose.co_evolve),
                          ("self_verify", cfg.feedback.self_verify),
                          ("critic", cfg.alignment.method != "none"
                           and cfg.alignment.labeller == "critic_population_vote")):
        if iterates and used:
            out.add(purpose)
    return out


def _expected_operators(cfg) -> set[str]:
    """The LLM operators (request context `operator`) the method's second iteration must have rendered."""
    if min(cfg.loop.iterations, cfg.budget.max_iterations or cfg.loop.iterations) < 2:
        return set()
    return set(cfg.tree.actions) | ({"mutation", "crossover"} if cfg.generate.crossover_rate > 0 else set())


# brax tasks: their reset and step compile beside the suite first (tests/background.py, job "brax_envs")
@pytest.mark.parametrize(("method", "env"), [pytest.param(m, t, marks=pytest.mark.background("brax_envs"))
                                             if t.startswith("brax/") else (m, t) for m, t in CASES])
def test_no_prompt_of_any_kind_leaks_for_any_method_on_any_task(compose_cfg, tmp_path, method, env):
    try:
        try:
            cfg = compose_cfg(f"method={method}", f"env={env}", *REHEARSAL, *_OPERATORS.get(method, []))
        except ValueError as exc:
            if "needs a reference reward" not in str(exc):
                raise
            cfg = compose_cfg(f"method={method}", f"env={env}", *REHEARSAL, *_OPERATORS.get(method, []), *NO_REFERENCE)
        if method not in _OPERATORS:  # the first task of the method: compose again with its operators' samples
            _OPERATORS[method] = _operator_overrides(cfg)
            if _OPERATORS[method]:
                cfg = compose_cfg(f"method={method}", f"env={env}", *REHEARSAL, *_OPERATORS[method],
                                  *(NO_REFERENCE if cfg.feedback.fitness == "benchmark_score" else ()))
        assert _operator_overrides(cfg) == _OPERATORS[method]  # the same on every task
        r = rehearse(cfg, tmp_path)
    except ValueError as exc:  # e.g. a class abstraction, a scripted expert or prompts (generate.suites) the suite lacks
        assert re.search(REFUSALS, str(exc)), exc
        return
    assert _expected_purposes(cfg, r) <= r.purposes(), f"prompt kinds not rendered: {_expected_purposes(cfg, r)}"
    operators = {req.context.get("operator") for req, _ in r.calls}
    assert _expected_operators(cfg) <= operators, f"operators not rendered: {_expected_operators(cfg) - operators}"
    leaks = findings(r, cfg)
    assert not leaks, "\n".join(leaks)


def test_grace_with_a_ppo_experts_demos_leaks_nothing(compose_cfg, tmp_path):
    """GRACE on Gym MuJoCo Walker2d, its expert demonstrations from a PPO expert (a cheap one: 2,048 steps, cached for
    the session), audited as above."""
    cfg = compose_cfg("method=grace", "env=mujoco/walker2d", *REHEARSAL[:-1], "demos.expert=ppo")
    r = rehearse(cfg, tmp_path)
    assert {"reward", "goal_states"} <= r.purposes()
    leaks = findings(r, cfg)
    assert not leaks, "\n".join(leaks)


_FIRST: dict[str, object] = {}  # method -> its config for the MT50 audit (composed once), or why the suite refuses it


def _first_iteration_cfg(compose_cfg, method: str):
    """The method's rehearsal config on Meta-World (composed on metaworld/push), one iteration; a str: the refusal."""
    if method not in _FIRST:
        args = [f"method={method}", "env=metaworld/push", *REHEARSAL, "budget.max_iterations=1"]
        try:
            try:
                _FIRST[method] = compose_cfg(*args)
            except ValueError as exc:
                if "needs a reference reward" not in str(exc):
                    raise
                _FIRST[method] = compose_cfg(*args, *NO_REFERENCE)
        except ValueError as exc:
            assert re.search(REFUSALS, str(exc)), exc
            _FIRST[method] = str(exc)
    return _FIRST[method]


@pytest.mark.parametrize("env", MT50_ONLY)
def test_no_first_iteration_prompt_leaks_on_the_mt50_tasks(compose_cfg, tmp_path, env):
    """Every method's set-up and first-iteration prompts (demonstrations and goal states, decomposition, the initial
    reward prompt, the verify stage's screens) on one of the forty Meta-World tasks beyond MT10."""
    from dataclasses import replace

    from bird.config.validate import validate
    from bird.envs.demos import env_config

    task = replace(env_config(env), horizon=REHEARSAL_HORIZON)
    leaks, audited = [], 0
    for method in METHODS:
        base = _first_iteration_cfg(compose_cfg, method)
        if isinstance(base, str):  # the suite refuses the method (it says so when its config loads)
            continue
        cfg = replace(base, env=task)
        assert validate(cfg) == [], method
        try:
            r = rehearse(cfg, tmp_path / method)
        except ValueError as exc:
            assert re.search(REFUSALS, str(exc)), exc
            continue
        expected = {"reward"} | ({"decompose"} if cfg.decompose.kind != "none" else set())
        assert expected <= r.purposes(), f"{method}: prompt kinds not rendered: {expected - r.purposes()}"
        leaks += [f"{method}: {leak}" for leak in findings(r, cfg)]
        audited += 1
    assert audited and not leaks, "\n".join(leaks)


# -- positive controls: the same audit must catch a deliberate leak of each kind -----------------------------------
def test_positive_control_the_old_few_shot_example_is_caught():
    assert eval_task_mentions(LEAKY_EXAMPLE) == ["metaworld/push"]
    assert [leak for leak in find_leaks(LEAKY_EXAMPLE, hidden_facts("metaworld/push")) if "0.05" in leak]
    assert eval_task_mentions("Open the window by sliding its handle") == ["metaworld/window_open"]
    assert eval_task_mentions("make the half-cheetah run; pick and place the block") == [
        "brax/half_cheetah", "gym/half_cheetah_backward", "gym/half_cheetah_target_speed", "metaworld/pick_place",
        "metaworld/pick_place_wall", "mujoco/half_cheetah"]
    assert eval_task_mentions("Hammer the nail into the wall") == ["metaworld/hammer"]  # an MT50 task is one too


def test_positive_control_thresholds_in_any_unit_and_names_only_as_env_code_are_caught():
    facts = hidden_facts("metaworld/drawer_close")
    assert facts.thresholds == (0.065,)
    for shown in ("d <= 0.065", "within 6.5 cm of the goal", "below 65 mm", "x < 6.5e-2"):
        assert find_leaks(shown, facts), shown
    assert not find_leaks("handle offset (0, -0.16, 0.05) m; a distance of 0.065", facts)  # no comparison
    assert find_leaks("def compute_reward(self, action, obs):", facts)  # Meta-World's method
    assert not find_leaks("def compute_reward(obs, action, next_obs, info):", facts)  # bird's own contract
    assert find_leaks("info['near_object'] and tolerance(x, bounds=(0, 1))", facts)


def test_the_native_task_score_is_the_reference_return_only_where_the_method_shows_it(compose_cfg, tmp_path):
    """eureka on MuJoCo shows the reference-reward return as task_score (BIRD's matched runs); with the benchmark score
    shown instead (+choice=benchmark_score_shown) the same value would be a leak, and is not there."""
    native = compose_cfg("method=eureka", "env=mujoco/hopper", *REHEARSAL)
    assert shows_reference_return(native) and any(f"{REFERENCE_SENTINEL}" in t for t in rehearse(native, tmp_path).feedback)
    shown = compose_cfg("method=eureka", "env=mujoco/hopper", *REHEARSAL, "+choice=benchmark_score_shown")
    assert not shows_reference_return(shown) and not findings(rehearse(shown, tmp_path / "b"), shown)
    assert not shows_reference_return(compose_cfg("method=eureka", "env=metaworld/push", *REHEARSAL))


@pytest.mark.parametrize("leak", ["few_shot", "env_code", "feedback", "described_fields", "task_file"])
def test_positive_control_a_leaky_method_fails_the_audit(compose_cfg, tmp_path, monkeypatch, leak):
    """Break the method's prompts on purpose in three places; the audit above must find each."""
    import inspect

    import bird.components.decompose as decompose
    import bird.prompts as prompts
    from bird.registry import _REGISTRY

    method, env = {"feedback": ("eureka", "mujoco/hopper"), "described_fields": ("grace", "metaworld/push"),
                   "task_file": ("eureka", "gym/pendulum")}.get(leak, ("regot", "metaworld/push"))
    if leak == "few_shot":
        real = prompts.templates
        monkeypatch.setattr(decompose, "templates", lambda name: {**real(name), "decompose_example_1": LEAKY_EXAMPLE})
    elif leak == "env_code":  # Meta-World's module source without the stripper
        from metaworld.env_dict import ALL_V3_ENVIRONMENTS

        raw = inspect.getsource(inspect.getmodule(ALL_V3_ENVIRONMENTS["push-v3"]))
        monkeypatch.setitem(_REGISTRY["env_representation"], "abstraction", lambda spec: raw)
    elif leak == "feedback":  # a feedback format that also prints the reference-reward return
        fmt = _REGISTRY["feedback_format"]["eureka"]

        def leaky(cfg, state, cand, res):
            text, stats = fmt(cfg, state, cand, res)
            return text + f"\nreference_return: {res.curve[-1].reference_return}", stats

        monkeypatch.setitem(_REGISTRY["feedback_format"], "eureka", leaky)
    elif leak == "described_fields":  # GRACE's bare field view rendering the full descriptions
        monkeypatch.setitem(_REGISTRY["field_view"], "bare", _REGISTRY["field_view"]["described"])
    shown = ["feedback.score_shown=benchmark_score"] if leak == "feedback" else []  # eureka's own task_score is native
    if leak == "task_file":  # a task text naming what the task file hides (its hidden.names)
        shown = ["env.description='Swing it up; the costs are what angle_normalize gives.'"]
    cfg = compose_cfg(f"method={method}", f"env={env}", *REHEARSAL, *shown)
    r = rehearse(cfg, tmp_path)
    found = "\n".join(findings(r, cfg))
    expected = {"few_shot": ["names evaluation task metaworld/push", "compares with a number: '< 0.05'",
                             "compares with the success threshold 0.05"],
                "env_code": ["names evaluate_state", "names TARGET_RADIUS", "names compute_reward"],
                "feedback": ["names reference_return", f"reference-reward return {REFERENCE_SENTINEL}"],
                "described_fields": ["shows the description of puck_pos", "carries more than field names"],
                "task_file": ["names costs", "names angle_normalize"]}[leak]
    for needle in expected:
        assert needle in found, f"{needle!r} not caught:\n{found}"


def test_positive_control_the_mt50_audit_audits_the_task_it_names(compose_cfg, tmp_path, monkeypatch):
    """A task text that compares with hammer's success threshold (0.09, not push's 0.05, the task the methods' configs
    were composed on): the audit must read the hidden facts of the task swapped in."""
    import bird.envs.demos as demos

    real = demos.env_config

    def leaky(env_id: str):
        env = real(env_id)
        env.description += " The nail is driven once it has moved more than 0.09 m."
        return env

    monkeypatch.setattr(demos, "env_config", leaky)
    with pytest.raises(AssertionError, match="compares with the success threshold 0.09"):
        test_no_first_iteration_prompt_leaks_on_the_mt50_tasks(compose_cfg, tmp_path, "metaworld/hammer")
