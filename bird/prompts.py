"""Prompt templates (methods/<name>/*.txt, variants in methods/<name>/<variant>/) and the env representations shown
to generators."""

from __future__ import annotations

from functools import cache

from bird import registry
from bird.config.validate import METHODS_DIR
from bird.envs.abstraction import generic_class_abstraction
from bird.envs.base import ObsField, TaskSpec
from bird.registry import register

__all__ = ["templates", "system_template", "render_obs_index", "render_fields", "obs_fields_context", "IMPORT_INSTRUCTIONS"]


@cache
def templates(name: str, language: str = "numpy") -> dict[str, str]:
    """All templates of one set, by file stem. A variant "<method>/<variant>" starts from the method's templates and
    replaces those its own folder holds (e.g. regot/no_graph: RE-GoT's prompts without the task-graph wording). A
    reward.language other than numpy then overlays <method>/<language>/*.txt (the jax.numpy wording)."""
    folders = [METHODS_DIR / p for p in _parents(name)]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        raise ValueError(f"generate.prompt={name!r}: no template folder {missing[0]}")
    if language != "numpy":
        folders += [f / language for f in folders if (f / language).is_dir()]
    return {p.stem: p.read_text() for f in folders for p in sorted(f.glob("*.txt"))}


def system_template(t: dict[str, str], suite: str) -> str:
    """A template set's system prompt for `suite`: its system_<suite>.txt when it has one (CARD's robot-arm text is
    system_metaworld.txt), else system.txt."""
    return t.get(f"system_{suite}", t["system"])


def _parents(name: str) -> list[str]:
    """"a/b/c" -> ["a", "a/b", "a/b/c"] (outermost first, so inner folders override)."""
    parts = name.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _shape(f: ObsField) -> str:
    """The array a compute_reward program reads for one field, by its batch-first shape."""
    if f.kind == "text":
        return "(batch,) of str"
    dims = f.shape or ((f.size,) if f.size > 1 else ())
    return "(batch,)" if not dims else "(batch, " + ", ".join(map(str, dims)) + ")"


def _state_shape(f: ObsField) -> str:
    """What one state's field is (GRACE's per-state reward_fn)."""
    if f.kind == "text":
        return "str"
    dims = f.shape or ((f.size,) if f.size > 1 else ())
    return "scalar" if not dims else "array of shape (" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


@register("field_view", "described")
def _described(spec: TaskSpec) -> tuple[str, list[dict]]:
    """Each field's name, shape, kind, unit, axis and description (the observation index in full)."""
    lines, ctx = [], []
    for f in spec.obs_index.fields:
        unit = f", {f.unit}" if f.unit else ""
        axis = f", axis {f.axis}" if f.axis else ""
        zero = " [always zero for this task]" if f.always_zero else ""
        lines.append(f'- obs["{f.name}"]: {_shape(f)}, kind {f.kind}{unit}{axis}: {f.description}{zero}')
        ctx.append({"name": f.name, "size": f.size, "kind": f.kind, "unit": f.unit, "axis": f.axis,
                    "description": f.description, "always_zero": f.always_zero})
    return "\n".join(lines), ctx


@register("field_view", "bare")
def _bare(spec: TaskSpec) -> tuple[str, list[dict]]:
    """Each field's name, shape and unit only: nothing about what it means for the task (GRACE §5.1)."""
    lines = [f'- state["{f.name}"]: ' + _state_shape(f) + (f", {f.unit}" if f.unit else "") for f in spec.obs_index.fields]
    return "\n".join(lines), [{"name": f.name, "size": f.size, "unit": f.unit} for f in spec.obs_index.fields]


def render_fields(spec: TaskSpec, view: str = "described") -> str:
    """The observation fields as prompt text, in the `generate.field_view` view."""
    return registry.get("field_view", view)(spec)[0]


def obs_fields_context(spec: TaskSpec, view: str = "described") -> list[dict]:
    """The observation fields as the structured context carries them (the same facts the prompt renders)."""
    return registry.get("field_view", view)(spec)[1]


def render_obs_index(spec: TaskSpec) -> str:
    """The observation index in full (the `described` field view)."""
    return render_fields(spec, "described")


@register("env_representation", "obs_code")
def obs_code(spec: TaskSpec) -> str:
    """Eureka: the env class header and its observation code (no reward, no docstring)."""
    return f"```python\n{spec.env_code}```" if spec.env_code else render_obs_index(spec)


@register("env_representation", "obs_index")
def obs_index(spec: TaskSpec) -> str:
    """Only the observation index (the fields are listed in the prompt either way)."""
    return f"(environment code not shown) A {spec.suite} task with a {spec.obs_index.dim}-dimensional observation."


@register("env_representation", "class_abstraction")
def class_abstraction(spec: TaskSpec) -> str:
    """A Pythonic class abstraction: the suite's own when it has one (Meta-World), else one built from the
    observation index (bird/envs/abstraction.py)."""
    if spec.extra.get("abstraction"):
        return str(spec.extra["abstraction"])
    return generic_class_abstraction(spec)


IMPORT_INSTRUCTIONS = ("You may import only math and numpy (as np). The code must not read files, the network or "
                       "the environment; it is executed in a sandbox.")
