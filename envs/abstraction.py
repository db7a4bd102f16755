"""A Pythonic class abstraction of any task, built from its observation index (Text2Reward / REvolve style): a class
whose attributes are the named observation fields, grouped by kind, with the action space as a comment."""

from __future__ import annotations

from bird.envs.base import ObsField, TaskSpec

__all__ = ["generic_class_abstraction"]

_GROUPS = (
    ("positions and angles", ("position", "angle", "angle_cos", "angle_sin", "position_delta", "quaternion")),
    ("velocities", ("velocity", "angular_velocity")),
    ("goal", ("goal",)),
    ("gripper and contacts", ("gripper", "contact")),
)


def _attr(f: ObsField) -> str:
    shape = "float" if f.size == 1 else f"np.ndarray  # shape ({f.size},);"
    unit = f" [{f.unit}]" if f.unit else ""
    sep = "  #" if f.size == 1 else ""
    return f"    {f.name}: {shape}{sep} obs['{f.name}']: {f.description}{unit}"


def generic_class_abstraction(spec: TaskSpec) -> str:
    """The class abstraction of `spec`: one attribute per live observation field, grouped by kind."""
    live = [f for f in spec.obs_index.fields if not f.always_zero]
    name = "".join(w.capitalize() for w in spec.task.split("_")) + "Env"
    lines = [f"class {name}:", f'    """{spec.description}', "",
             "    A reward program reads these attributes from the dicts `obs` and `next_obs` (one row per env in",
             '    the batch); `next_obs` holds them one step later.', '    """']
    known = {k for _, kinds in _GROUPS for k in kinds}
    for title, kinds in (*_GROUPS, ("other", ())):
        group = [f for f in live if (f.kind in kinds if kinds else f.kind not in known)]
        if group:
            lines += ["", f"    # {title}", *[_attr(f) for f in group]]
    low, high = min(spec.action_low), max(spec.action_high)
    lines += ["", f"    # action: an array of shape (batch, {spec.action_dim}), each entry in [{low:g}, {high:g}]"]
    return "\n".join(lines) + "\n"
