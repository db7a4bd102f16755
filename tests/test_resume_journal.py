"""Resume's cut of the LLM journal, fast (tests/test_resume.py's SIGKILL test guards it end to end, marked slow): the
journal the real JournalGenerator writes, a real checkpoint saved after iteration 1 and loaded back, then killed twice
in iteration 2. Each resume keeps exactly the calls made up to the checkpoint in llm_calls.jsonl and moves the later
ones, every one of them, to lost_llm_calls.jsonl (which keeps the first resume's too)."""

from __future__ import annotations

import json
from pathlib import Path

from bird import checkpoint
from bird.envs.registry import make_adapter
from bird.llm.base import Generator, Message, Request, Response
from bird.llm.journal import JournalGenerator
from bird.state import Plan, SearchState


class Priced(Generator):
    """Test double at the LLM boundary: every answer costs 0.25 USD."""

    provider = "priced-test"

    def __init__(self) -> None:
        super().__init__("priced", 1)

    def complete(self, request: Request) -> Response:
        return Response("{an idea}", self.model, input_tokens=10, output_tokens=5, cost_usd=0.25)


def _ask(gen: JournalGenerator, iteration: int, n: int) -> None:
    for k in range(n):
        gen.complete(Request("reward", (Message("user", f"iteration {iteration}, sample {k}"),),
                             {"iteration": iteration}, sample_index=k))


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


def _killed(root: Path) -> None:
    """What a kill in the middle of writing a journal line leaves behind."""
    with open(root / "llm_calls.jsonl", "a") as fh:
        fh.write('{"purpose": "reward", "iteration": 2, "cost_u')


def test_each_resume_keeps_the_calls_up_to_the_checkpoint_and_moves_every_later_one_to_the_lost_calls(compose_cfg,
                                                                                                     tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum")
    state = SearchState(make_adapter(cfg.env).spec, Plan(2, 2, 10, 10, 1, 1), 0, {})
    journal = tmp_path / "llm_calls.jsonl"
    gen = JournalGenerator(Priced(), journal)
    _ask(gen, 1, 2)
    state.iteration = 1
    checkpoint.save(tmp_path, cfg, state, gen.totals(), 1.0, [])
    kept = journal.read_bytes()

    _ask(gen, 2, 3)  # iteration 2's calls, then a kill mid-line
    _killed(tmp_path)
    saved = checkpoint.load(tmp_path, cfg)
    assert (saved.ledger["calls"], saved.ledger["cost_usd"]) == (2, 0.5)  # the accounting at the checkpoint
    first = checkpoint.rewind(tmp_path, saved)
    assert journal.read_bytes() == kept
    assert [e["iteration"] for e in _lines(tmp_path / "lost_llm_calls.jsonl")] == [2, 2, 2]
    assert (first["lost_llm_calls"], first["lost_cost_usd"]) == (3, 0.75)

    gen = JournalGenerator(Priced(), journal)  # the resumed search asks again, and is killed again
    _ask(gen, 2, 1)
    _killed(tmp_path)
    second = checkpoint.rewind(tmp_path, checkpoint.load(tmp_path, cfg))
    assert journal.read_bytes() == kept and [e["iteration"] for e in _lines(journal)] == [1, 1]
    lost = _lines(tmp_path / "lost_llm_calls.jsonl")
    assert [(e["iteration"], e["sample_index"]) for e in lost] == [(2, 0), (2, 1), (2, 2), (2, 0)]  # both resumes'
    assert (second["lost_llm_calls"], second["lost_cost_usd"]) == (1, 0.25)
