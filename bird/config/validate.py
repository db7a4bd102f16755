"""Cross-key validation: every problem is collected and reported at once, each naming its key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import bird.methods
from bird import registry
from bird.config.needs import needs_judgement
from bird.config.roles import check_roles
from bird.config.schema import BirdConfig
from bird.config.validate_search import check_search
from bird.config.validate_task import check_task
from bird.config.validate_transfer import check_transfer
from bird.types import FailureKind

__all__ = ["validate", "METHODS_DIR", "template_sets"]

# methods/<name>/: a method's home (README.md with its fidelity table, prompt templates *.txt, variant folders)
METHODS_DIR = Path(bird.methods.__file__).resolve().parent


def template_sets() -> list[str]:
    """Names `generate.prompt` accepts: methods/<name>/ holding a system.txt, and its variant folders
    methods/<name>/<variant>/ (a variant's templates override the method's files of the same name)."""
    homes = [p.parent for p in METHODS_DIR.glob("*/system.txt")]
    variants = [d for h in homes for d in h.iterdir() if d.is_dir() and any(d.glob("*.txt"))]
    return sorted(d.relative_to(METHODS_DIR).as_posix() for d in homes + variants)


_ENUMS: dict[str, tuple[str, ...]] = {
    "train.reward_source": ("candidate", "reference"),
    "llm.cache": ("off", "readwrite", "record", "replay"),
    "llm.mode": ("sync", "batch"),
    "demos.negative_kind": ("random",),
    "judge.mode": ("vlm", "state_text"),
    "budget.protocol": ("own", "matched"),
    "reward.language": ("numpy", "jax"),
    "video.record": ("none", "returned", "all_candidates"),
    "tracker.mode": ("offline", "online", "disabled"),
    "feedback.score_shown": ("benchmark_score", "reference_return", "native"),
}

_PROBABILITIES = ("verify.tpe_threshold", "feedback.p_expert_trajectory", "feedback.p_incorrect_state_only",
                  "feedback.p_expert_state_only")

_POSITIVE_INTS = (
    "generate.n_candidates",
    "generate.max_tokens",
    "generate.history_turns",
    "verify.smoke_steps",
    "verify.memory_mb",
    "train.n_steps",
    "train.batch_size",
    "train.n_epochs",
    "feedback.curve_points",
    "loop.iterations",
    "llm.max_concurrency",
    "budget.env_steps",
    "budget.n_envs",
    "budget.n_checkpoints",
    "budget.eval_episodes",
    "budget.final_seeds",
    "feedback.trajectory_stride",
    "feedback.n_wrong_examples",
    "demos.n_expert",
    "demos.n_negative",
    "demos.n_shown",
    "demos.stride",
    "feedback.judge_keyframes",
    "verify.progress_expert_episodes",
    "train.early_stop_patience",
    "train.early_stop_min_checkpoints",
    "judge.repeats",
    "judge.rollouts",
    "verify.demo_episodes",
    "video.every",
    "video.episodes",
    "video.width",
    "video.height",
    "video.frame_skip",
)


def _get(cfg: object, dotted: str) -> object:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _check_truncation(cfg: BirdConfig, problems: list[str]) -> None:
    limit = cfg.generate.truncation_max_tokens
    if limit is not None and limit < cfg.generate.max_tokens:
        problems.append(f"generate.truncation_max_tokens={limit}: must be >= generate.max_tokens="
                        f"{cfg.generate.max_tokens} or null")


def _check_numbers(cfg: BirdConfig, problems: list[str]) -> None:
    for key in _POSITIVE_INTS:
        if _get(cfg, key) < 1:  # type: ignore[operator]
            problems.append(f"{key}={_get(cfg, key)}: must be >= 1")
    for key in ("generate.parse_retries", "generate.truncation_retries", "generate.ambiguity_retries", "train.workers",
                "train.timeout_s", "llm.max_retries", "train.collect_episodes", "demos.rl_every", "decompose.n_examples", "decompose.retries"):
        if _get(cfg, key) < 0:  # type: ignore[operator]
            problems.append(f"{key}={_get(cfg, key)}: must be >= 0")
    for key in ("budget.max_candidates", "budget.max_iterations", "budget.final_env_steps", "budget.max_llm_calls",
                "select.population_size", "demos.max_train", "budget.max_policy_trainings", "decompose.n_subtasks",
                "train.n_envs", "final.seeds", "budget.sweep_max_llm_calls", "llm.sweep_max_concurrency"):
        value = _get(cfg, key)
        if value is not None and value < 1:  # type: ignore[operator]
            problems.append(f"{key}={value}: must be >= 1 or null")
    problems += [f"{k}={_get(cfg, k)}: must be >= 0 or null" for k in ("budget.max_cost_usd", "budget.sweep_max_cost_usd")
                 if (_get(cfg, k) or 0) < 0]  # type: ignore[operator]
    if not 0.0 <= cfg.generate.temperature <= 2.0:
        problems.append(f"generate.temperature={cfg.generate.temperature}: must be in [0, 2]")
    if cfg.verify.call_timeout_s <= 0:
        problems.append(f"verify.call_timeout_s={cfg.verify.call_timeout_s}: must be > 0")
    if not 0.0 < cfg.train.gamma <= 1.0:
        problems.append(f"train.gamma={cfg.train.gamma}: must be in (0, 1]")
    if cfg.env.horizon < 1:
        problems.append(f"env.horizon={cfg.env.horizon}: must be >= 1")
    for key in _PROBABILITIES:
        if not 0.0 <= _get(cfg, key) <= 1.0:  # type: ignore[operator]
            problems.append(f"{key}={_get(cfg, key)}: must be in [0, 1]")
    if not 0.0 <= cfg.demos.test_fraction < 1.0:
        problems.append(f"demos.test_fraction={cfg.demos.test_fraction}: must be in [0, 1)")
    if cfg.generate.parent_temperature <= 0:
        problems.append(f"generate.parent_temperature={cfg.generate.parent_temperature}: must be > 0")


def _check_names(cfg: BirdConfig, problems: list[str]) -> None:
    for key, family in registry.config_keys("keys").items():
        value = _get(cfg, key)
        allowed = registry.names(family)
        if value not in allowed:
            problems.append(f"{key}={value!r}: not a registered {family}; allowed: {allowed}")
    for key, family in registry.config_keys("optional_keys").items():
        value = _get(cfg, key)
        if value is not None and value not in registry.names(family):
            problems.append(f"{key}={value!r}: not a registered {family}; allowed: {registry.names(family)} or null")
    for key, family in registry.config_keys("list_keys").items():
        allowed = registry.names(family)
        items: list[str] = list(_get(cfg, key))  # type: ignore[call-overload]
        for item in items:
            if item not in allowed:
                problems.append(f"{key}: {item!r} is not a registered {family}; allowed: {allowed}")
    kinds = [str(k) for k in FailureKind]
    for item in cfg.generate.resample_on:
        if item not in kinds:
            problems.append(f"generate.resample_on: {item!r} is not a failure kind; allowed: {kinds}")
    if cfg.final.retrain and (cfg.final.learner or cfg.train.learner) == "none":
        problems.append("final.learner: the final retrain needs a learner other than 'none' (set final.learner)")
    for key, allowed in _ENUMS.items():
        if _get(cfg, key) not in allowed:
            problems.append(f"{key}={_get(cfg, key)!r}: allowed: {list(allowed)}")
    suite = cfg.env.id.partition("/")[0]
    if suite not in registry.names("suite"):
        problems.append(f"env.id={cfg.env.id!r}: unknown suite {suite!r}; allowed: {registry.names('suite')}")
    if cfg.generate.prompt not in template_sets():
        problems.append(f"generate.prompt={cfg.generate.prompt!r}: no template set; allowed: {template_sets()}")


def _check_couplings(cfg: BirdConfig, problems: list[str]) -> None:
    """Components that need another key set a certain way declare it when they register (Component.needs)."""
    for key in ("reward.form", "train.obs_augment", "feedback.format"):
        family = registry.config_keys()[key]
        if _get(cfg, key) not in registry.names(family):
            continue
        for need, allowed in registry.declared(family, _get(cfg, key)).needs.items():
            value = _get(cfg, need)
            ok = value in allowed if isinstance(allowed, tuple) else value >= allowed  # type: ignore[operator]
            if not ok:
                problems.append(f"{key}={_get(cfg, key)!r} needs {need} "
                                f"{'in ' + str(list(allowed)) if isinstance(allowed, tuple) else '>= ' + str(allowed)}, "
                                f"got {value!r}")
    _check_learner_needs(cfg, problems)
    check_task(cfg, problems)
    _check_executor(cfg, problems)
    for key in ("verify.progress_bound", "verify.progress_max_drop_fraction"):
        if _get(cfg, key) <= 0:  # type: ignore[operator]
            problems.append(f"{key}={_get(cfg, key)}: must be > 0")


# flag key -> (key it needs, test of that key's value, what the test asks): a flag that would change nothing otherwise
_FLAG_NEEDS: dict[str, tuple[str, Callable[[object], bool], str]] = {
    "generate.parent_thought": ("generate.design_thought", lambda v: v != "none", "other than 'none'"),
    "feedback.thought_alignment": ("generate.design_thought", lambda v: v != "none", "other than 'none'"),
    "decompose.co_evolve": ("decompose.kind", lambda v: v == "subtask_list", "= 'subtask_list'"),
}


def _check_flags(cfg: BirdConfig, problems: list[str]) -> None:
    for flag, (need, ok, wanted) in _FLAG_NEEDS.items():
        if _get(cfg, flag) and not ok(_get(cfg, need)):
            problems.append(f"{flag}={_get(cfg, flag)} needs {need} {wanted}, got {_get(cfg, need)!r}")


def _check_schedule(cfg: BirdConfig, problems: list[str]) -> None:
    """The schedule gives at least one candidate per iteration; values are only read by a schedule that reads them."""
    if cfg.generate.schedule not in registry.names("schedule"):
        return
    fn = registry.get("schedule", cfg.generate.schedule)
    if cfg.generate.schedule_values and not registry.declared("schedule", cfg.generate.schedule).reads_values:
        problems.append(f"generate.schedule_values={list(cfg.generate.schedule_values)} is only read by "
                        f"generate.schedule=explicit, not {cfg.generate.schedule!r}")
    try:
        counts = fn(cfg.generate.n_candidates, cfg.loop.iterations, list(cfg.generate.schedule_values))
    except ValueError as exc:
        problems.append(str(exc))
        return
    if any(c < 1 for c in counts):
        problems.append(f"generate.schedule={cfg.generate.schedule!r} gives {counts}: every iteration needs >= 1")


def _check_judge_keys(cfg: BirdConfig, problems: list[str]) -> None:
    """Judge-score settings that would change nothing: no configured component asks for judge scores."""
    try:
        judged = needs_judgement(cfg)
    except ValueError:  # an unregistered name, reported by _check_names
        return
    for key, default in (("judge.state_table", False), ("judge.repeats", 1)):
        if not judged and _get(cfg, key) != default:
            problems.append(f"{key}={_get(cfg, key)} has no effect: nothing scores with the judge (feedback.fitness="
                            "judge_score, feedback.format=subtask_judge or generate.behavioural_analysis)")


START_METHODS = ("forkserver", "spawn")  # how the local executor starts workers


def _check_executor(cfg: BirdConfig, problems: list[str]) -> None:
    """An executor that needs an optional package (attribute `needs_module`) names how to install it."""
    import importlib.util

    if cfg.train.resources.num_cpus <= 0 or cfg.train.resources.num_gpus < 0:
        problems.append(f"train.resources: num_cpus must be > 0 and num_gpus >= 0, got {cfg.train.resources}")
    if cfg.train.start_method not in START_METHODS:
        problems.append(f"train.start_method={cfg.train.start_method!r}: expected one of {list(START_METHODS)}")
    if cfg.train.executor in registry.names("executor"):
        module, hint = registry.declared("executor", cfg.train.executor).needs_module or (None, "")
        if module and importlib.util.find_spec(module) is None:
            problems.append(f"train.executor={cfg.train.executor!r} needs the {module!r} package: {hint}")


def _check_learner_needs(cfg: BirdConfig, problems: list[str]) -> None:
    """A learner's declared needs (Learner.needs: key -> allowed values) and the env suite's backends."""
    for key in ("train.learner", "final.learner"):
        name = _get(cfg, key)
        if name is None or name not in registry.names("learner"):
            continue
        for need, allowed in registry.get("learner", name).needs.items():
            if _get(cfg, need) not in allowed:
                problems.append(f"{key}={name!r} needs {need} in {list(allowed)}, got {_get(cfg, need)!r}")
    suite = cfg.env.id.partition("/")[0]
    if suite in registry.names("suite") and cfg.env.backend is not None:
        backends = registry.get("suite", suite).backends
        if cfg.env.backend not in backends:
            problems.append(f"env.backend={cfg.env.backend!r}: suite {suite!r} "
                            + (f"has backends {list(backends)}" if backends else "has one simulator (leave it unset)"))


def validate(cfg: BirdConfig) -> list[str]:
    """Return every problem found in `cfg` (empty when valid)."""
    problems: list[str] = []
    _check_numbers(cfg, problems)
    _check_truncation(cfg, problems)
    _check_names(cfg, problems)
    _check_couplings(cfg, problems)
    _check_flags(cfg, problems)
    _check_schedule(cfg, problems)
    _check_judge_keys(cfg, problems)
    check_search(cfg, problems)
    check_roles(cfg, problems)
    check_transfer(cfg, problems)
    return problems
