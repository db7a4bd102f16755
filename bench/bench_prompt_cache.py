"""What provider prompt caching saves on a Eureka smoke search: the search run against a local server speaking the
Anthropic Messages protocol with a prompt cache (tests/llm/fake_provider.py), once with llm.prompt_cache=true and
once with false, and against the OpenAI wire (automatic prefix caching: the recorded cost vs. the same tokens at the
full input price). Prices: the price table (claude-sonnet-5-5, gpt-6.1-sol). The fake server counts a token per word.

    python bench/bench_prompt_cache.py [--set KEY=VALUE ...]

One row per run in bench/results/prompt_cache.csv (the server: a token per word; Anthropic caches a marked prefix
on first sight, OpenAI the longest prefix shared with an earlier request).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm.fake_provider import ProviderServer  # noqa: E402
from llm.test_search_e2e import PROGRAM  # noqa: E402

from bird.config.load import compose  # noqa: E402
from bird.llm.prices import Usage, call_cost, price_for  # noqa: E402
from bird.loop import search  # noqa: E402

MODEL = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-6.1-sol"}
OVERRIDES = ["method=eureka", "env=mujoco/hopper", "budget=smoke", "budget.env_steps=1024", "final.retrain=false",
             "run.progress=false", "video.record=none", "llm.cache=off", "llm.max_concurrency=1"]


def run(wire: str, prompt_cache: bool, root: Path, extra: list[str]) -> dict:
    """One search; its journal's token and cost totals."""
    with ProviderServer(wire, PROGRAM.format(w=0.001, a=0.5)) as srv:
        cfg = compose([*OVERRIDES, *extra, f"llm={wire}", f"llm.base_url={srv.base_url}", f"llm.model={MODEL[wire]}",
                       f"llm.prompt_cache={str(prompt_cache).lower()}"])
        out = root / f"{wire}-{prompt_cache}"
        result = search(cfg, out)
    calls = [json.loads(x) for x in (out / "llm_calls.jsonl").read_text().splitlines()]
    price = price_for(wire, MODEL[wire])
    full = sum(call_cost(Usage(c["input_tokens"], c["output_tokens"]), price) for c in calls)
    return {"calls": len(calls), "input_tokens": sum(c["input_tokens"] for c in calls),
            "cached_input_tokens": sum(c["cached_input_tokens"] for c in calls),
            "cache_write_tokens": sum(c["cache_write_tokens"] for c in calls),
            "output_tokens": sum(c["output_tokens"] for c in calls), "cost_usd": result["cost_usd"],
            "cost_usd_at_full_input_price": full, "status": result["status"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="*", default=[], help="more overrides (a smaller training: the calls are the same)")
    args = parser.parse_args()
    started = record.begin()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"anthropic_cache": run("anthropic", True, Path(tmp), args.set),
                "anthropic_no_cache": run("anthropic", False, Path(tmp), args.set),
                "openai": run("openai", True, Path(tmp), args.set)}
    on, off, oa = runs["anthropic_cache"], runs["anthropic_no_cache"], runs["openai"]
    row = {"models": " ".join(f"{w}:{m}" for w, m in MODEL.items()), "calls": on["calls"],
           "input_tokens": on["input_tokens"], "output_tokens": on["output_tokens"],
           **{f"{name}_{key}": r[key] for name, r in runs.items()
              for key in ("cached_input_tokens", "cache_write_tokens", "cost_usd")},
           "openai_cost_usd_at_full_input_price": oa["cost_usd_at_full_input_price"],
           "anthropic_saving_fraction": round(1 - on["cost_usd"] / off["cost_usd"], 4),
           "openai_saving_fraction": round(1 - oa["cost_usd"] / oa["cost_usd_at_full_input_price"], 4)}
    record.append("prompt_cache", row, started)
    print(json.dumps({k: row[k] for k in ("anthropic_saving_fraction", "openai_saving_fraction")}))


if __name__ == "__main__":
    main()
