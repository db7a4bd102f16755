"""The offline synthesiser's mutation rules on hand-made parents and feedback, with a scripted random source so
every draw (and the options it was offered) is known: restructure at a near-zero score, rescale a flat or a
dominant component, jitter one weight."""

from __future__ import annotations

import math

import pytest

from bird.llm.offline.mutation import NEAR_ZERO_SCORE, mutate, optional_terms
from bird.llm.offline.terms import Term

FIELDS = [{"name": "rooty_angle", "size": 1, "kind": "angle"},
          {"name": "rootx_vel", "size": 1, "kind": "velocity"},
          {"name": "thigh_angvel", "size": 1, "kind": "angular_velocity"},
          {"name": "foot_angvel", "size": 1, "kind": "angular_velocity"},
          {"name": "leg_angvel", "size": 1, "kind": "angular_velocity"}]


class ScriptedRng:
    """Answers random(), choice() and randrange() from scripts; records what choice/randrange were offered."""

    def __init__(self, randoms=(), picks=(), ranges=()) -> None:
        self.randoms, self.picks, self.ranges = list(randoms), list(picks), list(ranges)
        self.offered: list[object] = []

    def random(self) -> float:
        return self.randoms.pop(0)

    def choice(self, seq):
        self.offered.append(tuple(seq))
        return seq[self.picks.pop(0)]

    def randrange(self, n: int) -> int:
        self.offered.append(n)
        return self.ranges.pop(0)

    def used_up(self) -> bool:
        return not (self.randoms or self.picks or self.ranges)


def _ctx(components, scores=None, **extra):
    fb = {"components": components, **extra}
    if scores is not None:
        fb["task_score"] = scores
    return {"obs_fields": FIELDS, "feedback": fb}


UPRIGHT = Term("upright", "upright", ("rooty_angle",), 1.0, "exp", 0.1)
PROGRESS = Term("forward_progress", "progress", ("rootx_vel",), 2.0)
ALIVE = Term("alive", "alive", (), 0.5)


def test_a_flat_exp_component_gets_a_new_temperature_and_one_weight_is_jittered():
    rng = ScriptedRng(picks=[1, 3], ranges=[1])
    comps = {"upright": [0.5, 0.5, 0.5], "forward_progress": [0.1, 0.9], "alive": [1.0, 1.0, 1.0]}
    out = mutate(_ctx(comps, [0.3]), [UPRIGHT, PROGRESS, ALIVE], rng)
    assert out == [Term("upright", "upright", ("rooty_angle",), 1.0, "exp", 0.4), PROGRESS.scaled(2.0), ALIVE]
    assert rng.offered == [(0.25, 4.0), 3, (0.5, 0.8, 1.25, 2.0)] and rng.used_up()


def test_a_flat_linear_component_is_tripled_and_alive_is_never_treated_as_flat():
    rng = ScriptedRng(picks=[0], ranges=[1])
    cost = Term("action_cost", "control", (), 0.01)
    out = mutate(_ctx({"action_cost": [-0.2, -0.2], "alive": [0.5, 0.5]}, [0.4]), [cost, ALIVE], rng)
    assert out == [Term("action_cost", "control", (), 0.03), ALIVE.scaled(0.5)] and rng.used_up()


@pytest.mark.parametrize("values, flat", [
    ([1.0, 1.05], True),  # spread 0.05 <= 5% of the mean 1.025
    ([1.0, 1.06], False),  # spread 0.06 > 5% of the mean 1.03
    ([0.0, 0.0], True),  # no spread at zero mean: still flat (the 1e-6 slack)
    ([float("nan"), 2.0, 2.0], True),  # NaNs are left out
    ([float("nan")], True),  # nothing left: mean 0, spread 0
])
def test_flatness_is_a_spread_within_five_percent_of_the_mean(values, flat):
    cost = Term("action_cost", "control", (), 1.0)
    out = mutate(_ctx({"action_cost": values}, [0.4]), [cost], ScriptedRng(picks=[0], ranges=[0]))
    assert out[0].weight == pytest.approx((3.0 if flat else 1.0) * 0.5)


@pytest.mark.parametrize("others, dominant", [(1.9, True), (2.0, False)])
def test_a_component_more_than_five_times_all_others_is_scaled_down(others, dominant):
    big = Term("big", "progress", ("rootx_vel",), 1.0)
    small = Term("small", "progress", ("rootx_vel",), 1.0)
    comps = {"big": [9.0, 11.0], "small": [others - 0.5, others + 0.5]}  # means 10 and `others`
    out = mutate(_ctx(comps, [0.4]), [big, small], ScriptedRng(picks=[0], ranges=[1]))
    assert out[0].weight == (0.25 if dominant else 1.0) and out[1].weight == 0.5


def test_a_lone_component_never_dominates_and_unreported_terms_are_left_alone():
    big = Term("big", "progress", ("rootx_vel",), 1.0)
    quiet = Term("quiet", "control", (), 1.0)  # no statistics shown for it
    out = mutate(_ctx({"big": [9.0, 11.0]}, [0.4]), [big, quiet], ScriptedRng(picks=[2], ranges=[0]))
    assert out == [big.scaled(1.25), quiet]


def test_a_near_zero_score_adds_an_optional_term_and_rescales_the_task_terms():
    dist = Term("target_distance", "distance", ("fingertip_minus_target",), 1.0, "exp", 0.3)
    rng = ScriptedRng(randoms=[0.59], picks=[0, 1, 0, 0], ranges=[2])
    comps = {"forward_progress": [0.1, 0.4], "target_distance": [0.2, 0.6]}
    out = mutate(_ctx(comps, [0.0, NEAR_ZERO_SCORE]), [PROGRESS, dist], rng)
    # action_cost was added (pick 0 of the optional terms), progress scaled by 3.0, distance by 0.3, then
    # the jitter (randrange 2) halved the new action cost
    assert out == [PROGRESS.scaled(3.0), dist.scaled(0.3), Term("action_cost", "control", (), 0.005)]
    assert rng.offered[0] == tuple(optional_terms(_ctx(comps), [PROGRESS, dist]))
    assert rng.offered[1:4] == [(0.3, 3.0), (0.3, 3.0), 3] and rng.used_up()


def test_a_near_zero_score_drops_a_term_when_the_coin_says_so():
    rng = ScriptedRng(randoms=[0.6], ranges=[0, 0], picks=[1])
    out = mutate(_ctx({}, [0.0]), [PROGRESS, UPRIGHT, ALIVE], rng)
    assert out == [UPRIGHT.scaled(0.8), ALIVE]  # PROGRESS dropped; the upright term is not a task-progress term
    assert rng.offered == [3, 2, (0.5, 0.8, 1.25, 2.0)] and rng.used_up()


def test_a_single_term_is_never_dropped():
    rng = ScriptedRng(randoms=[0.9], picks=[0, 0], ranges=[0])
    assert mutate(_ctx({}, [0.0]), [PROGRESS], rng) == [PROGRESS.scaled(0.3).scaled(0.5)] and rng.used_up()


@pytest.mark.parametrize("feedback, restructures", [
    ({"task_score": [0.06]}, False),
    ({"task_score": [NEAR_ZERO_SCORE]}, True),
    ({"task_score": [float("nan"), 0.0]}, True),  # NaN scores are left out, not compared
    ({"task_score": [float("nan")]}, False),  # no score at all: nothing says it is zero
    ({}, False),
    ({"task_score": [0.9], "preference": {"rate": 0.0}}, True),  # CARD's misranked preferences
])
def test_what_triggers_a_restructure(feedback, restructures):
    rng = ScriptedRng(randoms=[0.0], picks=[0, 0, 0], ranges=[0])
    ctx = {"obs_fields": FIELDS, "feedback": {"components": {}, **feedback}}
    out = mutate(ctx, [PROGRESS], rng)
    assert (len(out) == 2) is restructures  # the restructure added a term (random() = 0.0 < 0.6)


def test_no_feedback_at_all_only_jitters():
    out = mutate({"obs_fields": FIELDS}, [PROGRESS, ALIVE], ScriptedRng(picks=[1], ranges=[0]))
    assert out == [PROGRESS.scaled(0.8), ALIVE]
    assert mutate({"obs_fields": FIELDS, "feedback": None}, [], ScriptedRng()) == []


def test_optional_terms_offer_what_the_program_lacks():
    dist = Term("target_distance", "distance", ("fingertip_minus_target",), 1.0)
    got = optional_terms({"obs_fields": FIELDS}, [dist])
    assert got == [Term("action_cost", "control", (), 0.01),
                   Term("smoothness", "smooth", ("thigh_angvel", "foot_angvel"), 0.01),
                   Term("near_bonus", "bonus", ("fingertip_minus_target",), 1.0, temp=0.05),
                   Term("alive", "alive", (), 0.1)]
    no_angvel = [f for f in FIELDS if f["kind"] != "angular_velocity"]
    assert [t.name for t in optional_terms({"obs_fields": no_angvel}, [ALIVE, Term("action_cost", "control")])] == []
    assert math.isclose(NEAR_ZERO_SCORE, 0.05)


def test_flat_exp_terms_keep_their_extras_and_round_the_new_temperature_to_four_places():
    term = Term("near", "bonus", ("d",), 1.0, "exp", 0.33333, {"threshold_from": "text"})
    out = mutate(_ctx({"near": [0.2, 0.2]}, [0.4]), [term], ScriptedRng(picks=[1, 0], ranges=[0]))
    assert out[0].temp == 1.3333 and out[0].extra == {"threshold_from": "text"}


def test_a_component_whose_values_were_all_nan_counts_as_zero_for_dominance():
    big = Term("big", "progress", ("rootx_vel",), 1.0)
    gone = Term("gone", "control", (), 1.0)
    out = mutate(_ctx({"big": [9.0, 11.0], "gone": [float("nan")]}, [0.4]), [big, gone],
                 ScriptedRng(picks=[0, 0], ranges=[1]))
    assert out[0].weight == 1.0  # no other component has a mean: nothing to dominate


def test_dominance_over_a_small_positive_total():
    big = Term("big", "progress", ("rootx_vel",), 1.0)
    small = Term("small", "progress", ("rootx_vel",), 1.0)
    out = mutate(_ctx({"big": [2.0, 4.0], "small": [0.0, 1.0]}, [0.4]), [big, small], ScriptedRng(picks=[0], ranges=[1]))
    assert out[0].weight == 0.25  # mean 3 > 5 x 0.5


def test_a_near_zero_score_drops_one_of_two_terms_and_rescales_pair_distances():
    pair = Term("hand_to_puck", "pair_distance", ("hand_pos", "puck_pos"), 1.0)
    rng = ScriptedRng(randoms=[0.9], ranges=[1, 0], picks=[1, 0])
    out = mutate(_ctx({}, [0.0]), [pair, ALIVE], rng)
    assert out == [pair.scaled(3.0).scaled(0.5)] and rng.used_up()


def test_optional_terms_know_pair_distances_and_any_alive_term():
    pair = Term("hand_to_puck", "pair_distance", ("hand_pos", "puck_pos"), 1.0)
    stay = Term("stay", "alive", (), 1.0)
    names = [t.name for t in optional_terms({"obs_fields": FIELDS[:2]}, [pair, stay])]
    assert names == ["action_cost", "near_bonus"]
    bonus = optional_terms({"obs_fields": FIELDS[:2]}, [pair, stay])[1]
    assert (bonus.fields, bonus.weight, bonus.temp) == (("hand_pos", "puck_pos"), 1.0, 0.05)
