"""Component registry: (family, name) -> implementation, and what each implementation declares about itself.

Config values that name an implementation are keys here. FAMILIES declares, once, every family and the config keys
whose values name its members; the config validator, the judge-need check and the substitutes list all read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Family", "FAMILIES", "Component", "register", "get", "declared", "names", "families", "family",
           "config_keys", "describe", "load_builtin_components"]

T = TypeVar("T")


@dataclass(frozen=True)
class Family:
    """A registry family and the config keys whose values are names of its members.

    :param keys: keys holding one name; :param optional_keys: keys holding one name or null;
    :param list_keys: list keys whose items are names.
    """

    name: str
    doc: str
    keys: tuple[str, ...] = ()
    optional_keys: tuple[str, ...] = ()
    list_keys: tuple[str, ...] = ()


FAMILIES: tuple[Family, ...] = (
    Family("llm", "text generators", ("llm.backend",)),
    Family("suite", "environment suites (the part of env.id before '/')"),
    Family("hidden_facts", "per suite, what a generator must never see (the leak audit's list)"),
    Family("env_representation", "how the environment is shown to the generator", ("generate.env_representation",)),
    Family("field_view", "how observation fields are described", ("generate.field_view",)),
    Family("parent", "which earlier candidate a sample builds on", ("generate.parent", "crossover.parent")),
    Family("history", "which (answer, feedback) turns a prompt carries", ("generate.history",)),
    Family("prompt_mode", "how a prompt is assembled from system, first message and history",
           ("generate.prompt_mode",)),
    Family("mutation_view", "what a one-shot mutation prompt shows of its parent", ("generate.mutation_view",)),
    Family("design_thought", "how a design thought is asked for and parsed", ("generate.design_thought",)),
    Family("schedule", "candidates per iteration", ("generate.schedule",)),
    Family("sampling", "how an iteration's samples are planned", ("generate.sampling",)),
    Family("operator", "LLM operators a sample plan may name (tree.actions keys too)"),
    Family("repair", "what a resample after a failed answer shows", ("generate.repair",)),
    Family("answer_form", "how the program is asked for: in the answer's text, or as a tool call's argument",
           ("generate.answer_form",)),
    Family("crossover", "programmatic crossover of two programs", ("crossover.operator",)),
    Family("alignment", "post-generation alignment of a program's parameters", ("alignment.method",)),
    Family("segment_labeller", "who labels trajectory segments for alignment", ("alignment.labeller",)),
    Family("tunable", "which parts of a program alignment may change", ("alignment.tunable",)),
    Family("contract", "the reward program's entry points and how answers are parsed", ("reward.contract",)),
    Family("reward_form", "how the program's output becomes the training reward", ("reward.form",)),
    Family("decompose", "task decomposition before the search", ("decompose.kind",)),
    Family("positive_states", "which demonstration states count as positive", ("demos.positive_states",)),
    Family("check", "verify checks run on every program", list_keys=("verify.checks",)),
    Family("screen", "verify screens that may skip a program's training", list_keys=("verify.screens",)),
    Family("learner", "trains one policy per job", ("train.learner",), optional_keys=("final.learner",)),
    Family("obs_augment", "what is appended to the policy's observation", ("train.obs_augment",)),
    Family("checkpoint_selection", "which checkpoint a training ships", ("train.checkpoint_selection",)),
    Family("early_stop", "when a training stops early", ("train.early_stop",)),
    Family("executor", "where trainings run", ("train.executor",)),
    Family("aggregate", "how checkpoint values become one number", ("feedback.aggregate",)),
    Family("fitness", "what ranks candidates", ("feedback.fitness",), list_keys=("feedback.report_metrics",)),
    Family("feedback_format", "the feedback text and statistics shown to the generator", ("feedback.format",),
           optional_keys=("feedback.screened_format",)),
    Family("summarisation", "how feedback is summarised before it is shown", ("feedback.summarisation",)),
    Family("score_scale", "the judge's score scale", ("judge.score_scale",)),
    Family("select", "who carries forward", ("select.rule",)),
    Family("admission", "which children an island admits", ("islands.admission",)),
    Family("returned", "which candidate the search returns", ("select.returned",)),
    Family("tracker", "experiment trackers", ("tracker.backend",)),
)


@dataclass(frozen=True)
class Component:
    """A registered implementation and its declarations (all optional; the defaults declare nothing).

    :param needs: config key -> allowed values (a tuple) or a minimum (a number), checked when the config loads.
    :param needs_judge: it makes judge calls (a judge generator is built for the search).
    :param needs_judgement: it reads judge scores of every trained candidate.
    :param needs_eval_own_return: it reads each checkpoint's return under the candidate's own reward.
    :param needs_module: (module, install hint) of an optional package it imports.
    :param substitute: the label of what it stands in for, recorded in result.json.
    :param reads_values: a schedule that reads generate.schedule_values.
    :param always_last: a checkpoint rule that always ships the last checkpoint.
    :param resolve: suite -> the name it resolves to there (a suite-aware fitness).
    :param mate: a parent rule's choice of a second parent (crossover).
    :param needs_task: what the task must offer (TaskOffers fields: success_flag, reference_reward, ...), checked
        when the config loads.
    :param needs_policy: a fitness or feedback format that reads a trained policy (its checkpoints, rollouts); False
        for one computed without RL (GRACE's demo fitness and feedback), so a search using only such trains nothing in
        the loop.
    :param reasoning_temperature: an llm backend: (the role's LLMConfig) -> the only temperature the provider accepts
        while reasoning (llm.reasoning_effort other than none), which it is then not sent; None = any temperature.
    """

    fn: Any
    needs: Mapping[str, Any] = field(default_factory=dict)
    needs_judge: bool = False
    needs_judgement: bool = False
    needs_eval_own_return: bool = False
    needs_module: tuple[str, str] | None = None
    substitute: str | None = None
    reads_values: bool = False
    always_last: bool = False
    resolve: Callable[[str], str] | None = None
    mate: Callable[..., Any] | None = None
    needs_task: tuple[str, ...] = ()
    needs_policy: bool = True
    reasoning_temperature: Callable[[Any], float | None] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


_REGISTRY: dict[str, dict[str, Any]] = {}
_DECLARED: dict[str, dict[str, Component]] = {}
_BY_NAME = {f.name: f for f in FAMILIES}

# Modules whose import registers the built-in components. Kept light: heavy libraries are imported lazily inside.
_BUILTIN_MODULES = (
    "bird.prompts",
    "bird.reward.checks",
    "bird.components",
    "bird.stages.generate",
    "bird.stages.select",
    "bird.llm.offline",
    "bird.llm.backends",
    "bird.envs.registry",
    "bird.envs.metaworld.representations",
    "bird.learners",
    "bird.reward.contracts",
    "bird.reward.shaping",
    "bird.executors",
    "bird.tracking",
)


def register(family: str, name: str, **declares: Any) -> Callable[[T], T]:
    """Decorator: register `obj` under (family, name) with its declarations (Component's fields). An object that is
    itself a Component (a Learner, a Suite) carries its own. A duplicate name in one family is an error."""
    if family not in _BY_NAME:
        raise ValueError(f"registry: unknown family {family!r}; declare it in bird/registry.py FAMILIES")

    def deco(obj: T) -> T:
        members = _REGISTRY.setdefault(family, {})
        if name in members and members[name] is not obj:
            raise ValueError(f"registry: {family}/{name} is already registered")
        members[name] = obj
        _DECLARED.setdefault(family, {})[name] = obj if isinstance(obj, Component) else Component(obj, **declares)
        return obj

    return deco


def get(family: str, name: str) -> Any:
    """Return the component registered as (family, name), or raise a ValueError listing the allowed names."""
    load_builtin_components()
    members = _REGISTRY.get(family, {})
    if name not in members:
        raise ValueError(f"unknown {family} {name!r}; registered: {sorted(members)}")
    return members[name]


def declared(family: str, name: str) -> Component:
    """What (family, name) declares about itself (ValueError for an unknown name, as `get`)."""
    get(family, name)
    return _DECLARED[family][name]


def names(family: str) -> list[str]:
    """Sorted names registered in `family`."""
    load_builtin_components()
    return sorted(_REGISTRY.get(family, {}))


def families() -> list[str]:
    load_builtin_components()
    return sorted(_REGISTRY)


def family(name: str) -> Family:
    """The declaration of family `name`."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown registry family {name!r}; declared: {sorted(_BY_NAME)}")
    return _BY_NAME[name]


def config_keys(kind: str = "keys") -> dict[str, str]:
    """config key -> family, for FAMILIES' `keys`, `optional_keys` or `list_keys` (kind)."""
    return {key: f.name for f in FAMILIES for key in getattr(f, kind)}


def describe(name: str) -> str:
    """A family's purpose, its config keys and each member with the first line of its docstring."""
    f = family(name)
    keys = [*f.keys, *f.optional_keys, *f.list_keys]
    lines = [f"{f.name}: {f.doc}" + (f" (config: {', '.join(keys)})" if keys else "")]
    for member in names(name):
        doc = (getattr(_DECLARED[name][member].fn, "__doc__", None) or "").strip().splitlines()
        lines.append(f"  {member}" + (f": {doc[0]}" if doc else ""))
    return "\n".join(lines)


_loaded = False


def load_builtin_components() -> None:
    """Import every module that registers built-in components (idempotent)."""
    global _loaded
    if _loaded:
        return
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)
    _loaded = True
