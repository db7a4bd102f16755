"""Checks of the settings that depend on the task: that `env.id` names one its suite has, and that the task can serve
the view, the signals, the demonstrations and the frames the configuration asks of it (the suite's `offers`)."""

from __future__ import annotations

from typing import Any

from bird import registry
from bird.config.overrides import override_keys
from bird.config.schema import BirdConfig

__all__ = ["check_task", "signal_keys", "demo_expert", "description_warning", "DEMO_EXPERTS"]

DEMO_EXPERTS = ("auto", "scripted", "ppo")  # the values of demos.expert

# what a TaskOffers attribute means, for messages
_OFFER_WORDS = {"success_flag": "a success flag", "reference_reward": "a reference reward",
                "scripted_expert": "a scripted expert policy", "frames": "rendered frames",
                "jax_env": "an env that runs in JAX (Brax)"}


# the task-file key that declares an offer (the others no task file has)
_DECLARED_BY = {"success_flag": "env.task.success", "reference_reward": "env.task.reference_reward"}


def _get(cfg: object, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def signal_keys(cfg: BirdConfig) -> list[tuple[str, str]]:
    """(key, fitness name) of every setting that names a ranking or shown signal."""
    return [("feedback.fitness", cfg.feedback.fitness), ("feedback.score_shown", cfg.feedback.score_shown),
            *[("feedback.report_metrics", m) for m in cfg.feedback.report_metrics]]


def _resolved(key: str, name: str, suite: str, problems: list[str]) -> str | None:
    """The fitness `name` resolves to on `suite` (native: the suite's signal); a problem naming `key` if none."""
    if name not in registry.names("fitness"):
        return None  # reported by the name checks (or by the feedback.score_shown enum)
    resolve = registry.declared("fitness", name).resolve
    try:
        return resolve(suite) if resolve else name
    except ValueError as exc:
        problems.append(f"{key}={name!r}: {exc}")
        return None


def _needs(cfg: BirdConfig, suite: str, problems: list[str]) -> list[tuple[str, str, str]]:
    """(key, value, offer) for every offer of the task the configured components declare they need (needs_task)."""
    out = []
    for key, name in signal_keys(cfg):
        resolved = _resolved(key, name, suite, problems)
        if resolved is not None:
            shown = name if resolved == name else f"{name} (here: {resolved})"
            out += [(key, shown, need) for need in registry.declared("fitness", resolved).needs_task]
    for kind in ("keys", "optional_keys"):
        for key, family in registry.config_keys(kind).items():
            value = _get(cfg, key)
            if family != "fitness" and value is not None and value in registry.names(family):
                out += [(key, value, need) for need in registry.declared(family, value).needs_task]
    if cfg.train.reward_source == "reference":
        out.append(("train.reward_source", "reference", "reference_reward"))
    if cfg.feedback.format == "judge" and cfg.judge.mode == "vlm":
        out.append(("judge.mode", "vlm", "frames"))
    return out


def _offering(need: str) -> list[str]:
    """The suites whose every task offers `need` (a suite whose tasks differ, the gym suite, is left out)."""
    out = []
    for suite in registry.names("suite"):
        fixed = registry.get("suite", suite).suite_offers()
        if fixed is not None and getattr(fixed, need):
            out.append(suite)
    return out


def _refusal(key: str, value: str, need: str, env_id: str) -> str:
    suite = env_id.partition("/")[0]
    if key == "judge.mode":
        return (f"judge.mode=vlm needs rendered frames, which suite {suite!r} does not render for {env_id}; "
                "set judge.mode=state_text (the labelled RE-GoT-S substitute)")
    declared = _DECLARED_BY.get(need)
    return (f"{key}={value} needs {_OFFER_WORDS[need]}, and task {env_id} has none; suites whose tasks have one: "
            f"{_offering(need)}" + (f" (a task file declares it: {declared})" if declared else ""))


def demo_expert(choice: str, offers: Any, env_id: str) -> str:
    """Where the task's expert demonstrations come from under demos.expert=`choice`: "scripted" (its scripted expert
    policy) or "ppo" (a PPO expert trained on its reference reward); auto takes the first the task offers. A ValueError
    naming the key and what the task offers when it offers neither, or not the one asked for."""
    if choice not in DEMO_EXPERTS:
        raise ValueError(f"demos.expert={choice!r}: allowed: {list(DEMO_EXPERTS)}")
    offered = [name for name, need in (("scripted", "scripted_expert"), ("ppo", "reference_reward"))
               if getattr(offers, need)]
    if choice in offered:
        return choice
    if choice == "auto" and offered:
        return offered[0]
    if choice == "scripted":  # the wording tests and users know
        raise ValueError(f"demos.enabled=true with demos.expert=scripted: this configuration learns from scripted-expert "
                         f"demonstrations, and suite {env_id.partition('/')[0]!r} has no scripted expert policy for "
                         f"{env_id}; suites with one: {_offering('scripted_expert')}"
                         + ("; or set demos.expert=ppo (a PPO expert trained on the task's reference reward)"
                            if offers.reference_reward else ""))
    if offers.scripted_expert:
        raise ValueError(f"demos.expert=ppo: task {env_id} has no reference reward to train a PPO expert on; set "
                         "demos.expert=scripted (its scripted expert policy)")
    raise ValueError(f"demos.enabled=true: task {env_id} names no source of expert demonstrations: it has no reference "
                     "reward to train a PPO expert on (demos.expert=ppo) and no scripted expert policy; a task file "
                     "names one with env.task.expert (module:function returning a policy obs -> action)")


def check_task(cfg: BirdConfig, problems: list[str]) -> None:
    """Refuse a task the suite does not have, and settings the task cannot serve, naming the key and what is allowed."""
    suite = cfg.env.id.partition("/")[0]
    needs = _needs(cfg, suite, problems)  # a signal with no meaning on the suite is named even if the suite is unknown
    if suite not in registry.names("suite"):
        return  # reported by the name checks
    if cfg.env.task is not None and registry.get("suite", suite).suite_offers() is not None:
        problems.append(f"env.task: a task file, and suite {suite!r} reads none (its tasks are built in); a task file "
                        "is a gym-suite task: env.id=gym/<task>")
    try:
        offers = registry.get("suite", suite).offers(cfg.env)
    except ValueError as exc:
        lines = str(exc).split("\n")
        problems += [line if line.startswith("env.") else f"env.id={cfg.env.id!r}: {line}" for line in lines]
        return
    reps = offers.representations
    if reps is not None and cfg.generate.env_representation not in reps:
        problems.append(f"generate.env_representation={cfg.generate.env_representation!r}: suite {suite!r} has no such "
                        f"view of its tasks ({cfg.env.id} offers {list(reps)}); set generate.env_representation="
                        f"{reps[0]}")
    for key, value, need in dict.fromkeys(needs):
        if not getattr(offers, need):
            problems.append(_refusal(key, value, need, cfg.env.id))
    if cfg.demos.enabled:
        try:
            demo_expert(cfg.demos.expert, offers, cfg.env.id)
        except ValueError as exc:
            problems.append(str(exc))


def description_warning(overrides: list[str], env_id: str) -> str | None:
    """A warning when the command line rewrites `env.description`: the generator reads the new words, but the task's
    score, success flag and reference reward are still the task's own (asking Hopper to hop backward still scores
    forward motion). None when no override touches it."""
    if "env.description" not in override_keys(overrides):
        return None
    return (f"env.description is overridden, but {env_id}'s score, success flag and reference reward are unchanged: "
            f"the search is still ranked and reported on the task's own objective (`python -m bird.envs describe "
            f"{env_id}` shows it). To score another objective, write a task file with its own score "
            f"(docs/task_files.md).")
