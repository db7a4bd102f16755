"""What a BabyAI task shows and hides: the level's own class source without its instruction (its success check:
minigrid.envs.babyai.core.verifier, or bird's verifiers of the new levels) and the names of that check and of the
reference reward, which no prompt may carry."""

from __future__ import annotations

import inspect
import textwrap

from bird.envs.mujoco.source import full_source

__all__ = ["hidden_names", "level_source"]

_VERIFIER = ("verify", "verify_action", "reset_verifier", "lastStepMatch", "instrs", "find_matching_objs",
             "update_objs_poss", "between_cells", "_reward")
_INSTRUCTIONS = ("ActionInstr", "GoToInstr", "OpenInstr", "PickupInstr", "PutNextInstr", "BeforeInstr", "AfterInstr",
                 "AndInstr", "SeqInstr", "PlaceBetweenInstr", "SortColorsInstr", "_MatchingDoorInstr")


def hidden_names() -> frozenset[str]:
    """The verifier's and the reward's identifiers (the same for every level)."""
    return frozenset(_VERIFIER + _INSTRUCTIONS)


def level_source(level_cls: type) -> str:
    """The level class (how it lays out rooms, objects and the agent) with its instruction and whatever reads it
    removed: Eureka's `full_source` view (ValueError if a hidden name survives)."""
    text = textwrap.dedent(inspect.getsource(level_cls))
    return full_source(level_cls, text, origin=f"minigrid level {level_cls.__name__}", remove=hidden_names())
