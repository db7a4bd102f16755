"""What a task hides from generators (its reference reward, its success check and thresholds), and the matcher that
finds them in text. The suites say what is hidden (registry family `hidden_facts`); bird/leaks.py audits prompts and
run directories with it, and the task checker (bird/envs/check.py) every view a task renders."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bird.config.schema import EnvConfig
from bird.registry import get

__all__ = ["HiddenFacts", "hidden_facts", "find_leaks", "compared_numbers", "HARNESS_NAMES", "CONTRACT_NAMES"]

# bird's own names for what a generator must never see (a feedback format that dumped them would leak)
HARNESS_NAMES = frozenset({"reference_return", "reference_reward", "ref_rewards", "bird_episode"})
# Names a suite hides that bird's reward-program contract also uses: hidden only as a method of the env, `name(self`
CONTRACT_NAMES = frozenset({"compute_reward"})

_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)(?:e(-?\d+))?"
_COMPARISON = re.compile(
    r"(<=|>=|<|>|≤|≥|==|\bbelow\b|\bunder\b|\bless than\b|\bsmaller than\b|\bgreater than\b|\bmore than\b|\babove\b"
    rf"|\bat most\b|\bat least\b|\bwithin\b|\bthreshold(?: of)?\b)\s*\(?\s*{_NUMBER}\s*(cm|mm|m)?\b", re.IGNORECASE)
_UNIT = {"cm": 0.01, "mm": 0.001, "m": 1.0, None: 1.0, "": 1.0}


@dataclass(frozen=True)
class HiddenFacts:
    """What a task hides from generators."""

    env_id: str
    names: frozenset[str]  # identifiers of the reference reward and the success check; quoted = info-dict keys
    thresholds: tuple[float, ...]  # the numbers the success check compares against (none when there is no check)


_FACTS: dict[str, HiddenFacts] = {}


def hidden_facts(env: str | EnvConfig) -> HiddenFacts:
    """The hidden facts of a task: an env id ("<suite>/<task>") or an env config (a task file's facts come from it),
    from the suite's registered `hidden_facts` reader."""
    env_id = env if isinstance(env, str) else env.id
    key = env_id if isinstance(env, str) or env.task is None else repr(env)
    if key not in _FACTS:
        suite, _, task = env_id.partition("/")
        names, thresholds = get("hidden_facts", suite)(task, None if isinstance(env, str) else env)
        _FACTS[key] = HiddenFacts(env_id, frozenset(names) | HARNESS_NAMES, tuple(thresholds))
    return _FACTS[key]


def _name_pattern(name: str) -> str:
    if name in CONTRACT_NAMES:
        return rf"(?<![\w]){re.escape(name)}\(\s*self\b"
    return rf"(?<![\w]){re.escape(name)}(?![\w])"


def compared_numbers(text: str) -> list[tuple[str, float]]:
    """(matched text, value in metres where a length unit is given) of every number in a comparison."""
    out = []
    for m in _COMPARISON.finditer(text):
        value = float(m.group(2)) * (10.0 ** int(m.group(3)) if m.group(3) else 1.0)
        out.append((m.group(0), value * _UNIT[(m.group(4) or "").lower()]))
    return out


def find_leaks(text: str, facts: HiddenFacts) -> list[str]:
    """Every hidden name in `text`, and every comparison with one of the success thresholds."""
    found = [f"names {name}" for name in sorted(facts.names) if re.search(_name_pattern(name), text)]
    found += [f"compares with the success threshold {t:g}: {shown!r}" for shown, value in compared_numbers(text)
              for t in facts.thresholds if abs(value - t) < 1e-9]
    return found
