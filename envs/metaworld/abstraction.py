"""Pythonic class abstraction of a Meta-World task (Text2Reward / CARD style), built from the observation index."""

from __future__ import annotations

from bird.envs.base import ObsField, ObsIndex

__all__ = ["class_abstraction"]

_SHAPES = {1: "float"}


def _attr(f: ObsField) -> str:
    shape = _SHAPES.get(f.size, f"np.ndarray  # shape ({f.size},)")
    unit = f" [{f.unit}]" if f.unit else ""
    sep = "  #" if f.size == 1 else ";"
    return f"    {f.name}: {shape}{sep} obs['{f.name}']: {f.description}{unit}"


def class_abstraction(class_name: str, description: str, index: ObsIndex, action_note: str) -> str:
    """A class whose attributes are the named observation fields, grouped into robot, objects and goal.

    :param class_name: e.g. "PushEnv".
    :param description: the task text.
    :param index: the task's observation index; always-zero fields are listed by name only.
    :param action_note: one paragraph on the action space.
    """
    live = [f for f in index.fields if not f.always_zero]
    zero = [f.name for f in index.fields if f.always_zero]
    robot = [f for f in live if f.kind == "gripper" or f.name.endswith("hand_pos")]
    goal = [f for f in live if f.kind == "goal"]
    objects = [f for f in live if f not in robot and f not in goal]
    lines = [
        f"class {class_name}:",
        f'    """{description}',
        "",
        "    A reward program reads these attributes from the dicts `obs` and `next_obs` (one row per env",
        "    in the batch). Positions are world coordinates in metres; z points up; the table top is near z = 0.",
        '    """',
        "",
        "    # robot (a Sawyer arm with a two-finger gripper)",
        *[_attr(f) for f in robot if not f.name.startswith("prev_")],
        "",
        "    # objects",
        *[_attr(f) for f in objects if not f.name.startswith("prev_")],
        "",
        "    # goal",
        *[_attr(f) for f in goal],
        "",
        "    # the same quantities one step earlier",
        *[_attr(f) for f in live if f.name.startswith("prev_")],
    ]
    if zero:
        lines += ["", f"    # always zero in this task (padding): {', '.join(zero)}"]
    lines += ["", "    # action", *[f"    # {line}" for line in action_note.splitlines()]]
    return "\n".join(lines) + "\n"
