"""The task checker (`python -m bird.envs check TASK`): builds a task's env, runs a few uniform-random episodes and
checks what every run relies on, each problem with the key at fault and its fix; `describe` prints what a generator
is shown of the task; `measure_anchor` measures the random-policy anchor of a score."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bird import registry
from bird.config.schema import EnvConfig
from bird.envs.base import TaskAdapter
from bird.envs.hidden import find_leaks, hidden_facts
from bird.envs.registry import TaskOffers, make_adapter, split_env_id

__all__ = ["Finding", "Report", "check_task", "describe_task", "measure_anchor", "FIELD_VIEWS"]

FIELD_VIEWS = ("described", "bare")


@dataclass(frozen=True)
class Finding:
    """One problem: the config key at fault, what is wrong, and how to fix it."""

    key: str
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.key}] {self.problem}\n    fix: {self.fix}"


@dataclass
class Report:
    """A check's problems (any one fails it) and notes (what was measured and what the task offers)."""

    env_id: str
    problems: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _key_of(message: str, default: str) -> str:
    """The config key a message starts with ("env.task.score.function=...: ..."), else `default`."""
    head = message.split(":", 1)[0].split("=", 1)[0].split(" ", 1)[0]
    return head if head.startswith(("env.", "generate.", "feedback.")) else default


def _episode(env: Any, seed: int, success: bool) -> dict[str, Any]:
    """One uniform-random episode: its quantity, score, reference return, length and whether every step had a flag."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    out: dict[str, Any] = {"first_obs": np.asarray(obs), "return": 0.0, "steps": 0, "flagged": True, "finite_obs": True}
    while True:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        out["return"] += float(reward)
        out["steps"] += 1
        out["finite_obs"] &= bool(np.all(np.isfinite(obs)))
        out["flagged"] &= (not success) or "success" in info
        if terminated or truncated:
            out.update(info["bird_episode"])
            return out


def _offers(env: EnvConfig, report: Report) -> tuple[EnvConfig, TaskOffers | None]:
    """The suite's offers of the task (problems for what fails), with an unset task-file anchor set to 0 to go on."""
    if env.task is not None and env.task.score.random is None:
        env = replace(env, task=replace(env.task, score=replace(env.task.score, random=0.0)))
        report.notes.append("score.random is unset: episodes are scored from 0 here; see the anchor below")
        report.problems.append(Finding("env.task.score.random", "the uniform-random policy's quantity is not set",
                                       "set it to the measured anchor printed below (or `python -m bird.envs anchor "
                                       f"{env.id}` over 100 episodes)"))
    suite = split_env_id(env.id)[0]
    try:
        return env, registry.get("suite", suite).offers(env)
    except ValueError as exc:
        for line in str(exc).split("\n"):
            line = line.removeprefix("  - ")
            report.problems.append(Finding(_key_of(line, "env.id"), line, "fix the task file as the message says"))
        return env, None


def _episodes(adapter: TaskAdapter, offers: TaskOffers, episodes: int, seed: int, report: Report) -> list[dict]:
    """Run the random episodes; problems for a failing step, a non-finite score, a missing success flag."""
    make = getattr(adapter, "make_unanchored_env", None)
    env = make(seed) if make is not None else adapter.make_env(seed)
    out = []
    try:
        for k in range(episodes):
            try:
                ep = _episode(env, seed + k, offers.success_flag)
            except Exception as exc:  # noqa: BLE001 - a failing step is a problem of the task, reported with its key
                msg = f"{type(exc).__name__}: {exc}"
                report.problems.append(Finding(_key_of(str(exc), "env.task"), f"episode {k} failed: {msg}",
                                               "fix what the message names (score, success or wrappers)"))
                return out
            out.append(ep)
    finally:
        env.close()
    return out


def _check_episodes(adapter: TaskAdapter, offers: TaskOffers, eps: list[dict], report: Report) -> None:
    dim = adapter.spec.obs_index.dim
    if eps and eps[0]["first_obs"].shape != (dim,):
        report.problems.append(Finding("env.task.fields", f"the observation has shape {eps[0]['first_obs'].shape}, the "
                                       f"fields cover {dim} slots", "make the fields' slices tile the observation"))
    for k, ep in enumerate(eps):
        for what in ("quantity", "score"):
            if not math.isfinite(ep[what]):
                report.problems.append(Finding("env.task.score", f"episode {k}: the score's {what} is {ep[what]}",
                                               "make the score finite on every episode (a NaN or inf ranks nothing)"))
        if not ep["flagged"]:
            report.problems.append(Finding("env.task.success", f"episode {k}: a step's info has no success flag",
                                           "declare the flag the env sets (success.info_key) or a success.function"))
        if not ep["finite_obs"]:
            report.notes.append(f"episode {k}: an observation was not finite")
        if offers.reference_reward and not math.isfinite(ep["return"]):
            report.problems.append(Finding("env.task.reference_reward", f"episode {k}: the reference reward's return "
                                           f"is {ep['return']}", "declare reference_reward: none, or fix the reward"))
    if eps:
        q = np.array([ep["quantity"] for ep in eps])
        report.notes.append(f"random-policy anchor over {len(eps)} episodes: quantity {q.mean():.6g} "
                            f"(std {q.std():.3g}); mean length {np.mean([ep['steps'] for ep in eps]):.0f} steps")


def _anchor(adapter: TaskAdapter, report: Report) -> None:
    norm = getattr(adapter, "score_normalisation", None)
    if norm is None:
        return
    try:
        random_q, scale = norm()
    except Exception as exc:  # noqa: BLE001 - an anchor that cannot be read is a problem
        report.problems.append(Finding(_key_of(str(exc), "anchor"), str(exc), "measure and store the anchor"))
        return
    report.notes.append(f"stored anchor: random quantity {random_q:.6g}, scale {scale:.6g}")


def _views(env: EnvConfig, adapter: TaskAdapter, offers: TaskOffers) -> dict[str, tuple[str, str]]:
    """view -> (rendered text or the error, the key a leak there is fixed at), for every view a prompt may show."""
    spec, file = adapter.spec, env.task is not None
    reps = offers.representations or tuple(registry.names("env_representation"))
    out = {"task description": (spec.description, "env.description")}
    for view in FIELD_VIEWS:
        out[f"fields ({view})"] = (registry.get("field_view", view)(spec)[0], "env.task.fields" if file else "env")
    where = {"full_source": "env.task.source.remove", "obs_code": "env.task.source.obs_method"}
    for rep in reps:
        key = where.get(rep, "env.task.fields") if file else "generate.env_representation"
        try:
            out[f"env_representation {rep}"] = (str(registry.get("env_representation", rep)(spec)), key)
        except Exception as exc:  # noqa: BLE001 - a declared view that cannot render is a problem
            out[f"env_representation {rep}"] = (f"\0{type(exc).__name__}: {exc}", key)
    return out


def _check_views(env: EnvConfig, adapter: TaskAdapter, offers: TaskOffers, report: Report) -> None:
    """Every view renders, and none names what the task hides or compares with its thresholds."""
    facts = hidden_facts(env)
    for view, (text, key) in _views(env, adapter, offers).items():
        if text.startswith("\0"):
            report.problems.append(Finding(key, f"the {view} view does not render: {text[1:]}",
                                           "fix the source settings, or stop offering the view"))
            continue
        for leak in find_leaks(text, facts):
            report.problems.append(Finding(key, f"the {view} view {leak} (hidden from generators)",
                                           f"remove it from what {key} shows" + (
                                               " (add the name to source.remove)" if key.endswith("remove") else "")))
    report.notes.append(f"hides {len(facts.names)} names and {len(facts.thresholds)} thresholds")


def _check_keys(env: EnvConfig, adapter: TaskAdapter, offers: TaskOffers, report: Report) -> None:
    """The settings that depend on the task: the native signal, score_shown, views, demonstrations, frames."""
    suite = split_env_id(env.id)[0]
    try:
        native = registry.declared("fitness", "native").resolve(suite)  # type: ignore[misc]
    except ValueError as exc:
        native = f"refused ({exc})"
    if native == "reference_return" and not offers.reference_reward:
        native = "refused (no reference reward): feedback.fitness=native and feedback.score_shown=native are refused"
    shown = ["benchmark_score"] + (["reference_return", "native"] if offers.reference_reward else [])
    report.notes.append(f"native signal: {native}; feedback.score_shown may be {shown}")
    report.notes.append(f"generate.env_representation may be {list(offers.representations or ['any'])}")
    expert = hasattr(adapter, "expert_policy")
    if offers.scripted_expert != expert:
        report.problems.append(Finding("demos", f"the suite says scripted expert={offers.scripted_expert}, the adapter "
                                       f"{'has' if expert else 'has no'} expert_policy()",
                                       "declare what the adapter has (Suite.scripted_expert)"))
    sources = [name for name, has in (("scripted expert", expert), ("PPO expert on the reference reward",
                                                                    offers.reference_reward)) if has]
    report.notes.append(f"demonstrations: {', '.join(sources) or 'none (demos.enabled is refused)'}; "
                        f"success flag: {'yes' if offers.success_flag else 'no'}; frames: {offers.frames}")


def check_task(env: EnvConfig, episodes: int = 2, seed: int = 0) -> Report:
    """Check one task: its file (or suite entry), env, fields, score, success flag, anchor, views and dependent keys."""
    report = Report(env.id)
    env, offers = _offers(env, report)
    if offers is None:
        return report
    try:
        adapter = make_adapter(env)
        _ = adapter.spec
    except Exception as exc:  # noqa: BLE001 - an env that cannot be built is the first problem, and the last
        report.problems.append(Finding(_key_of(str(exc), "env.task.make"), f"{type(exc).__name__}: {exc}",
                                       "fix what the message names"))
        return report
    eps = _episodes(adapter, offers, episodes, seed, report)
    _check_episodes(adapter, offers, eps, report)
    if env.task is None:
        _anchor(adapter, report)
    _check_views(env, adapter, offers, report)
    _check_keys(env, adapter, offers, report)
    return report


def describe_task(env: EnvConfig, view: str = "") -> str:
    """What a generator may be shown of the task: its text, fields, action space and every view it offers."""
    suite = split_env_id(env.id)[0]
    offers = registry.get("suite", suite).offers(env)
    adapter = make_adapter(env)
    views = _views(env, adapter, offers)
    spec = adapter.spec
    if view:
        chosen = {k: v for k, v in views.items() if k.endswith(view)}
        if not chosen:
            raise ValueError(f"view={view!r}: the task offers {[k.rpartition(' ')[2] for k in views]}")
        views = chosen
    head = [f"{env.id} ({suite} suite): horizon {spec.horizon}, observation {spec.obs_index.dim} slots, "
            f"action {spec.action_dim} in [{min(spec.action_low):g}, {max(spec.action_high):g}]"]
    return "\n\n".join(head + [f"== {name} ==\n{text.lstrip(chr(0))}" for name, (text, _) in views.items()]) + "\n"


def measure_anchor(adapter: TaskAdapter, episodes: int, seed: int) -> dict[str, Any]:
    """The uniform-random policy's episode quantity: mean and std over `episodes` episodes reset with seed, seed+1, ..."""
    make = getattr(adapter, "make_unanchored_env", None)
    if make is None:
        raise ValueError(f"{adapter.spec.env_id}: this suite measures its anchors with its own command "
                         f"(python -m bird.envs.{adapter.spec.suite}.baselines)")
    env = make(seed)
    try:
        q = np.array([_episode(env, seed + k, False)["quantity"] for k in range(episodes)])
    finally:
        env.close()
    return {"quantity_mean": float(q.mean()), "quantity_std": float(q.std(ddof=1)) if len(q) > 1 else 0.0,
            "episodes": episodes, "seed": seed, "policy": "uniform random over the action box"}
