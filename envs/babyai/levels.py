"""GRACE's 20 BabyAI levels (arXiv 2510.02180v2, Table 3): the 17 public ones (minigrid 3.2.0's `BabyAI-*-v0`) and the
paper's three new ones (App. A.3; bird/envs/babyai/new_levels.py). bird's task name is the paper's level name."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Level", "LEVELS", "level"]


@dataclass(frozen=True)
class Level:
    """:param gym_id: the gymnasium id of the level; :param new: one of GRACE's new levels (App. A.3)."""

    name: str
    gym_id: str
    new: bool = False


_PUBLIC = {  # Table 3's name -> minigrid's (GoToRedBallNoDist is minigrid's GoToRedBallNoDists)
    "GoToRedBallNoDist": "BabyAI-GoToRedBallNoDists-v0", "GoToRedBall": "BabyAI-GoToRedBall-v0",
    "PickupDist": "BabyAI-PickupDist-v0", "PickupLoc": "BabyAI-PickupLoc-v0", "GoToObj": "BabyAI-GoToObj-v0",
    "OpenDoorColor": "BabyAI-OpenDoorColor-v0", "OpenTwoDoors": "BabyAI-OpenTwoDoors-v0",
    "OpenRedDoor": "BabyAI-OpenRedDoor-v0", "GoToObjS4": "BabyAI-GoToObjS4-v0",
    "GoToRedBlueBall": "BabyAI-GoToRedBlueBall-v0", "GoToRedBallGrey": "BabyAI-GoToRedBallGrey-v0",
    "Pickup": "BabyAI-Pickup-v0", "Open": "BabyAI-Open-v0", "OpenRedBlueDoors": "BabyAI-OpenRedBlueDoors-v0",
    "OpenDoorLoc": "BabyAI-OpenDoorLoc-v0", "GoToLocalS8N7": "BabyAI-GoToLocalS8N7-v0", "GoToDoor": "BabyAI-GoToDoor-v0",
}
_NEW = {"PlaceBetween": "bird/BabyAI-PlaceBetween-v0", "OpenMatchingDoor": "bird/BabyAI-OpenMatchingDoor-v0",
        "SortColors": "bird/BabyAI-SortColors-v0"}

LEVELS: dict[str, Level] = {**{n: Level(n, g) for n, g in _PUBLIC.items()},
                            **{n: Level(n, g, new=True) for n, g in _NEW.items()}}


def level(task: str) -> Level:
    """The level bird's task `task` names; a ValueError listing the 20 levels for an unknown one."""
    if task not in LEVELS:
        raise ValueError(f"unknown babyai task {task!r}; available: {sorted(LEVELS)}")
    return LEVELS[task]
