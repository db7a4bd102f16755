"""The Meta-World MT10 v3 tasks of BIRD Table 7: Meta-World names, object names and scripted policies."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetaWorldTask", "TASKS", "HORIZON", "SCORE_DEFINITION", "canonical_task"]

# Meta-World's max_path_length; the env raises if stepped past it.
HORIZON = 500

SCORE_DEFINITION = (
    "fraction of evaluation episodes in which Meta-World's success flag is set on at least one step "
    "(BIRD Table 7)"
)


@dataclass(frozen=True)
class MetaWorldTask:
    mw_name: str  # Meta-World's env name, e.g. "push-v3"
    obj: str  # field-name stem for the first object, e.g. "puck" -> "puck_pos"
    obj_desc: str  # what the first object's position slots measure
    quat_order: str  # "xyzw" (scipy, from a geom/site matrix) or "wxyz" (MuJoCo body xquat)
    goal_desc: str  # what the goal slots hold
    policy: str  # scripted expert class in metaworld.policies

    @property
    def score_definition(self) -> str:
        return SCORE_DEFINITION


TASKS: dict[str, MetaWorldTask] = {
    "button_press_topdown": MetaWorldTask(
        "button-press-topdown-v3",
        "button",
        "top of the button (button body centre of mass + 0.193 m in z)",
        "wxyz",
        "position of the hole the button is pressed into",
        "SawyerButtonPressTopdownV3Policy",
    ),
    "door_open": MetaWorldTask(
        "door-open-v3",
        "door_handle",
        "centre of the door handle geom",
        "xyzw",
        "where the door handle should end up when the door is open",
        "SawyerDoorOpenV3Policy",
    ),
    "drawer_close": MetaWorldTask(
        "drawer-close-v3",
        "drawer_handle",
        "drawer handle (drawer body centre of mass + (0, -0.16, 0.05) m)",
        "wxyz",
        "position of the drawer handle when the drawer is closed",
        "SawyerDrawerCloseV3Policy",
    ),
    "drawer_open": MetaWorldTask(
        "drawer-open-v3",
        "drawer_handle",
        "drawer handle (drawer body centre of mass + (0, -0.16, 0) m)",
        "wxyz",
        "position of the drawer handle when the drawer is open",
        "SawyerDrawerOpenV3Policy",
    ),
    "peg_insert_side": MetaWorldTask(
        "peg-insert-side-v3",
        "peg",
        "grasp point on the peg (site pegGrasp)",
        "xyzw",
        "position inside the hole of the box where the peg must be inserted",
        "SawyerPegInsertionSideV3Policy",
    ),
    "pick_place": MetaWorldTask(
        "pick-place-v3",
        "puck",
        "centre of mass of the puck",
        "xyzw",
        "where the puck must be placed (may be above the table)",
        "SawyerPickPlaceV3Policy",
    ),
    "push": MetaWorldTask(
        "push-v3",
        "puck",
        "centre of mass of the puck",
        "xyzw",
        "where the puck must be pushed to on the table",
        "SawyerPushV3Policy",
    ),
    "reach": MetaWorldTask(
        "reach-v3",
        "puck",
        "centre of mass of a puck on the table (not needed for the task)",
        "xyzw",
        "where the hand must reach",
        "SawyerReachV3Policy",
    ),
    "window_close": MetaWorldTask(
        "window-close-v3",
        "window_handle",
        "start of the window handle (site handleCloseStart)",
        "xyzw",
        "where the window handle should end up when the window is closed",
        "SawyerWindowCloseV3Policy",
    ),
    "window_open": MetaWorldTask(
        "window-open-v3",
        "window_handle",
        "start of the window handle (site handleOpenStart)",
        "xyzw",
        "where the window handle should end up when the window is open",
        "SawyerWindowOpenV3Policy",
    ),
}


def canonical_task(name: str) -> str:
    """Map "pick-place", "pick-place-v3" or "pick_place" to the canonical key "pick_place".

    Raises ValueError listing the valid names when the task is unknown.
    """
    key = name.strip().removesuffix("-v3").replace("-", "_")
    if key == "peg_insertion_side":
        key = "peg_insert_side"
    if key not in TASKS:
        raise ValueError(f"unknown metaworld task {name!r}; available: {sorted(TASKS)}")
    return key
