"""RE-GoT's prompts: the no-decomposition ablation (§V-D1, "unstructured direct prompting") shows no graph wording;
the default shows the graph; the substitute names the judge model actually used."""

import re

import pytest

GRAPH_WORDS = re.compile(r"graph|sub-?goal|\bedges?\b|\bnodes?\b|\bstages?\b", re.IGNORECASE)
FAST = ["env=metaworld/drawer_open", "env.horizon=50", "budget.max_candidates=1", "verify.checks=[static]",
        "judge.mode=state_text", "run.progress=false"]


def _generator_prompts(r) -> list[str]:
    return ["\n".join(m.content for m in req.messages if m.role != "assistant") for req, _ in r.calls
            if req.purpose in ("reward", "mutation")]


@pytest.mark.parametrize("choice,graph", [(None, True), ("no_decomposition", False)])
def test_no_decomposition_prompts_carry_no_graph_wording(compose_cfg, rehearse_prompts, tmp_path, choice, graph):
    cfg = compose_cfg("method=regot", *FAST, *([f"+choice={choice}"] if choice else []))
    r = rehearse_prompts(cfg, tmp_path)
    prompts = _generator_prompts(r)
    assert {"reward", "mutation"} <= r.purposes() and ("decompose" in r.purposes()) == graph
    shown = []
    for text in prompts:  # the judge's verdict and the programs are generator-authored; templates and rendering are not
        for piece in r.authored:
            text = text.replace(piece, " ")
        shown.append(text)
    found = [m.group(0) for t in shown for m in [GRAPH_WORDS.search(t)] if m]
    assert shown and len(found) == (len(shown) if graph else 0), found  # the default is the positive control
