"""The 50 Meta-World v3 tasks (MT50; MT10 = BIRD Table 7): task text, object names and what their slots measure.

Read from Meta-World itself, not written here: the env name (`mw_name`, the key with hyphens and "-v3"), the scripted
expert (`metaworld.policies.ENV_POLICY_MAP`), the quaternion order of each object (source.quat_orders), which slots are
always zero (obs_index), the success thresholds (source.success_thresholds). The conf files `conf/env/metaworld/*.yaml`
are generated from this table (`python -m bird.envs.metaworld.conf --write`; a test keeps them in step).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetaWorldTask", "TASKS", "MT10", "HORIZON", "SCORE_DEFINITION", "canonical_task", "task_names"]

# Meta-World's max_path_length; the env raises if stepped past it.
HORIZON = 500

SCORE_DEFINITION = (
    "fraction of evaluation episodes in which Meta-World's success flag is set on at least one step "
    "(BIRD Table 7)"
)


@dataclass(frozen=True)
class MetaWorldTask:
    key: str  # bird's task name, e.g. "pick_place"
    description: str  # the task text a generator is shown (env.description)
    obj: str  # field-name stem for the first object, e.g. "puck" -> "puck_pos"
    obj_desc: str  # what the first object's position slots measure
    goal_desc: str  # what the goal slots hold
    obj2: str = ""  # field-name stem of a second object (hammer, stick-pull, stick-push)
    obj2_desc: str = ""

    @property
    def mw_name(self) -> str:
        """Meta-World's env name, e.g. "pick-place-v3"."""
        return self.key.replace("_", "-") + "-v3"

    @property
    def policy(self) -> str:
        """The scripted expert's class name in metaworld.policies."""
        from metaworld.policies import ENV_POLICY_MAP

        return ENV_POLICY_MAP[self.mw_name].__name__

    @property
    def score_definition(self) -> str:
        return SCORE_DEFINITION


def _t(key: str, description: str, obj: str, obj_desc: str, goal_desc: str, obj2: str = "",
       obj2_desc: str = "") -> tuple[str, MetaWorldTask]:
    return key, MetaWorldTask(key, description, obj, obj_desc, goal_desc, obj2, obj2_desc)


_BUTTON_TOP = "top of the button (button body centre of mass + 0.193 m in z)"
_BUTTON_FRONT = "front of the button (button body centre of mass - 0.193 m in y)"
_PUCK = "centre of mass of the puck"
_PLATE = "centre of the plate (geom puck)"

TASKS: dict[str, MetaWorldTask] = dict([
    _t("assembly", "Pick up the nut by its handle and lower it over the peg.",
       "nut", "a point on the nut's handle (site RoundNut-8)", "position of the peg the nut must be lowered over"),
    _t("basketball", "Pick up the basketball and drop it into the hoop.",
       "ball", "centre of mass of the basketball", "position of the hoop"),
    _t("bin_picking", "Pick the cube up from one bin and place it in the other bin.",
       "cube", "centre of mass of the cube", "where the cube must be placed in the other bin"),
    _t("box_close", "Pick up the lid and put it on the box to close it.",
       "lid", "centre of mass of the box lid", "where the lid must sit on top of the box"),
    _t("button_press_topdown", "Press the button down from above until it is fully pressed.",
       "button", _BUTTON_TOP, "position of the hole the button is pressed into"),
    _t("button_press_topdown_wall", "Press the button down from above, reaching over the wall in front of it.",
       "button", _BUTTON_TOP, "position of the hole the button is pressed into"),
    _t("button_press", "Push the button on the front of the box straight in until it is fully pressed.",
       "button", _BUTTON_FRONT, "position of the button when it is fully pressed"),
    _t("button_press_wall", "Push the button straight in, reaching past the wall in front of it.",
       "button", _BUTTON_FRONT, "position of the button when it is fully pressed"),
    _t("coffee_button", "Push the button on the front of the coffee machine.",
       "button", "the coffee machine's button (site buttonStart)", "position of the button when it is pressed"),
    _t("coffee_pull", "Pull the mug out from under the coffee machine to the goal position.",
       "mug", "centre of mass of the mug", "where the mug must be pulled to"),
    _t("coffee_push", "Push the mug under the coffee machine's spout.",
       "mug", "centre of mass of the mug", "where the mug must be pushed to, under the spout"),
    _t("dial_turn", "Turn the dial until its marker reaches the goal position.",
       "dial", "a point on the dial's rim that turns with it (dial centre + its rotated offset)",
       "where the rim point must be turned to"),
    _t("disassemble", "Grasp the nut by its handle and lift it off the peg.",
       "nut", "a point on the nut's handle (site RoundNut-8)", "a point above the peg the nut must be lifted to"),
    _t("door_close", "Push the open door, which swings on a revolving hinge, closed by its handle.",
       "door_handle", "centre of the door handle geom", "where the door handle should end up when the door is closed"),
    _t("door_lock", "Turn the door's lock down to lock it.",
       "lock", "tip of the lock lever (site lockStartLock)", "position of the lock lever's tip when locked"),
    _t("door_open", "Open the door, which swings on a revolving hinge, by pulling its handle until the door is open.",
       "door_handle", "centre of the door handle geom", "where the door handle should end up when the door is open"),
    _t("door_unlock", "Turn the door's lock up to unlock it.",
       "lock", "tip of the lock lever (site lockStartUnlock)", "position of the lock lever's tip when unlocked"),
    _t("drawer_close", "Push the open drawer until it is closed.",
       "drawer_handle", "drawer handle (drawer body centre of mass + (0, -0.16, 0.05) m)",
       "position of the drawer handle when the drawer is closed"),
    _t("drawer_open", "Pull the drawer open by its handle.",
       "drawer_handle", "drawer handle (drawer body centre of mass + (0, -0.16, 0) m)",
       "position of the drawer handle when the drawer is open"),
    _t("faucet_close", "Rotate the faucet handle clockwise to close the faucet.",
       "faucet_handle", "end of the faucet handle (site handleStartClose - 0.01 m in z)",
       "where the handle's end must be rotated to"),
    _t("faucet_open", "Rotate the faucet handle counter-clockwise to open the faucet.",
       "faucet_handle", "end of the faucet handle (site handleStartOpen - 0.01 m in z)",
       "where the handle's end must be rotated to"),
    _t("hammer", "Pick up the hammer and drive the nail into the wall with it.",
       "hammer", "centre of mass of the hammer", "position of the nail when it is driven in",
       "nail", "centre of mass of the nail"),
    _t("hand_insert", "Grasp the block and put it into the hole in the table.",
       "block", "centre of mass of the block", "position of the hole the block must go into"),
    _t("handle_press_side", "Press the handle down, approaching it from the side.",
       "handle", "end of the handle (site handleStart)", "position of the handle's end when pressed down"),
    _t("handle_press", "Press the handle down.",
       "handle", "end of the handle (site handleStart)", "position of the handle's end when pressed down"),
    _t("handle_pull_side", "Pull the handle up, approaching it from the side.",
       "handle", "centre of the handle (site handleCenter)", "position of the handle when pulled up"),
    _t("handle_pull", "Pull the handle up.",
       "handle", "end of the handle (site handleRight)", "position of the handle's end when pulled up"),
    _t("lever_pull", "Pull the lever up until it points upward.",
       "lever", "end of the lever (site leverStart)", "where the lever's end must be raised to"),
    _t("peg_insert_side", "Grasp the peg and insert it sideways into the hole in the box.",
       "peg", "grasp point on the peg (site pegGrasp)",
       "position inside the hole of the box where the peg must be inserted"),
    _t("peg_unplug_side", "Grasp the peg plugged into the side of the box and pull it out.",
       "peg", "end of the peg (site pegEnd)", "where the peg's end must be pulled to"),
    _t("pick_out_of_hole", "Pick the object up out of the hole in the table and move it to the goal position.",
       "object", "centre of mass of the object", "where the object must be moved to"),
    _t("pick_place", "Pick up the puck and place it at the goal position.",
       "puck", _PUCK, "where the puck must be placed (may be above the table)"),
    _t("pick_place_wall", "Pick up the puck, carry it over the wall and place it at the goal position.",
       "puck", "centre of the puck geom", "where the puck must be placed (may be above the table)"),
    _t("plate_slide_back_side", "Slide the plate sideways out of the cabinet to the goal position.",
       "plate", _PLATE, "where the plate must be slid to"),
    _t("plate_slide_back", "Slide the plate back out of the cabinet to the goal position.",
       "plate", _PLATE, "where the plate must be slid to"),
    _t("plate_slide_side", "Slide the plate sideways across the table into the cabinet.",
       "plate", _PLATE, "position in the cabinet the plate must be slid into"),
    _t("plate_slide", "Slide the plate across the table into the cabinet.",
       "plate", _PLATE, "position in the cabinet the plate must be slid into"),
    _t("push_back", "Push the puck back, towards the robot, to the goal position.",
       "puck", "centre of the puck geom", "where the puck must be pushed to on the table"),
    _t("push", "Push the puck across the table to the goal position.",
       "puck", _PUCK, "where the puck must be pushed to on the table"),
    _t("push_wall", "Push the puck around the wall in its way to the goal position.",
       "puck", "centre of the puck geom", "where the puck must be pushed to on the table"),
    _t("reach", "Move the robot's hand (end effector) to the goal position.",
       "puck", "centre of mass of a puck on the table (not needed for the task)", "where the hand must reach"),
    _t("reach_wall", "Move the robot's hand (end effector) past the wall to the goal position.",
       "puck", "centre of mass of a puck on the table (not needed for the task)", "where the hand must reach"),
    _t("shelf_place", "Pick up the puck and place it on the shelf at the goal position.",
       "puck", _PUCK, "where the puck must be placed on the shelf"),
    _t("soccer", "Push the ball into the goal.",
       "ball", "centre of mass of the ball", "position in the goal the ball must reach"),
    _t("stick_pull", "Grasp the stick and use it to pull the thermos to the goal position.",
       "stick", "centre of mass of the stick", "where the thermos must be pulled to",
       "thermos", "the thermos's handle, where the stick goes in (site insertion)"),
    _t("stick_push", "Grasp the stick and use it to push the thermos to the goal position.",
       "stick", "centre of mass of the stick", "where the thermos must be pushed to",
       "thermos", "a point on the thermos (site insertion + 0.09 m in y)"),
    _t("sweep_into", "Sweep the puck across the table into the hole.",
       "puck", _PUCK, "position of the hole the puck must be swept into"),
    _t("sweep", "Sweep the puck off the edge of the table.",
       "puck", "centre of mass of the puck (body position)", "a point past the table's edge the puck must reach"),
    _t("window_close", "Push the open window closed by sliding its handle sideways.",
       "window_handle", "start of the window handle (site handleCloseStart)",
       "where the window handle should end up when the window is closed"),
    _t("window_open", "Push the closed window open by sliding its handle sideways.",
       "window_handle", "start of the window handle (site handleOpenStart)",
       "where the window handle should end up when the window is open"),
])

# MT10 v3: BIRD Table 7's Meta-World tasks
MT10 = ("button_press_topdown", "door_open", "drawer_close", "drawer_open", "peg_insert_side", "pick_place", "push",
        "reach", "window_close", "window_open")


def task_names() -> tuple[str, ...]:
    """Every task's canonical name, sorted (the suite's `tasks`)."""
    return tuple(sorted(TASKS))


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
