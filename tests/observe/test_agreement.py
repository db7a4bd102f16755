"""Agreement statistics on fixed ratings, checked against values computed by hand (derivations below)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest

from bird.analysis.__main__ import main as analysis_main
from bird.analysis.agreement import (
    agreement_report,
    human_vs_benchmark,
    krippendorff_alpha,
    reliability,
    spearman,
)

# Two raters, five Meta-World clips (one per task), 5-point scale. First showings:
#   completion  A: 1 2 3 3 5    B: 1 3 3 4 5        benchmark: 0.1 0.3 0.2 0.5 0.4
# Repeats: A sees clip 2 again and says 3 (first 2); B sees clip 4 again and says 4 (first 4).
# (naturalness on the repeats: A 2 (first 2), B 5 (first 4))
A = [1, 2, 3, 3, 5]
B = [1, 3, 3, 4, 5]
BENCH = [0.1, 0.3, 0.2, 0.5, 0.4]
NAT_A = [2, 2, 4, 3, 5]
NAT_B = [1, 2, 4, 4, 5]

# Krippendorff's α, ordinal, between raters (units = clips). Coincidences: o11=2, o23=o32=1, o33=2, o34=o43=1, o55=2;
# marginals n1=2 n2=1 n3=4 n4=1 n5=2, n=10. Ordinal δ²(c,k) = (Σ_{g=c..k} n_g − (n_c+n_k)/2)²:
# δ²23 = (5−2.5)² = 6.25, δ²34 = (5−2.5)² = 6.25 → D_o = (2·6.25 + 2·6.25)/10 = 2.5.
# D_e = Σ_{c≠k} n_c n_k δ²ck / (n(n−1)) with δ²12=2.25 δ²13=16 δ²14=42.25 δ²15=64 δ²24=25 δ²25=42.25 δ²35=16
# δ²45=2.25: 2·(4.5+128+84.5+25+25+25+256+84.5+128+4.5)/90 = 1530/90 = 17 → α = 1 − 2.5/17 = 29/34.
ALPHA_BETWEEN = 29 / 34
# Within rater (units = (rater, clip) pairs (2,3) and (4,4)): n2=n3=1, n4=2, n=4; δ²23=1, δ²24=6.25, δ²34=2.25;
# D_o = 2·1/4 = 0.5; D_e = 2·(1 + 2·6.25 + 2·2.25)/12 = 3 → α = 1 − 0.5/3 = 5/6.
ALPHA_WITHIN = 5 / 6
# Spearman ρ, mean completion per clip (1, 2.5, 3, 3.5, 5: ranks 1..5) vs benchmark (ranks 1 3 2 5 4):
# Σd² = 0+1+1+1+1 = 4 → ρ = 1 − 6·4/(5·24) = 0.8.
RHO_COMPLETION = 0.8


def _rows() -> pd.DataFrame:
    rows = []
    for rater, comp, nat in (("A", A, NAT_A), ("B", B, NAT_B)):
        for clip in range(5):
            rows.append({"rater": rater, "clip_id": clip + 1, "is_repeat": 0, "suite": "metaworld",
                         "task": f"task{clip}", "benchmark_score": BENCH[clip], "completion": comp[clip],
                         "naturalness": nat[clip], "scale_points": 5})
    rows.append({**rows[1], "is_repeat": 1, "completion": 3, "naturalness": 2})  # A, clip 2 again
    rows.append({**rows[8], "is_repeat": 1, "completion": 4, "naturalness": 5})  # B, clip 4 again
    return pd.DataFrame(rows)


def test_krippendorff_alpha_ordinal_matches_the_hand_computation():
    assert krippendorff_alpha(np.array([A, B]), 5) == pytest.approx(ALPHA_BETWEEN, abs=1e-12)
    # positive control: the same data under the interval metric gives another value
    import krippendorff

    interval = krippendorff.alpha(reliability_data=np.array([A, B]), level_of_measurement="interval")
    assert abs(interval - ALPHA_BETWEEN) > 0.01
    assert math.isnan(krippendorff_alpha(np.array([[3, 3], [3, 3]]), 5))  # no variation: undefined


def test_reliability_table_reproduces_hand_computed_values():
    table = reliability(_rows(), n_resamples=300, seed=0).set_index(["comparison", "question"])
    between = table.loc[("between raters", "completion")]
    assert between["pairs"] == 5
    assert between["exact match"].value == pytest.approx(3 / 5)  # clips 1, 3, 5 agree
    assert between["mean gap"].value == pytest.approx(2 / 5)
    assert between["alpha"].value == pytest.approx(ALPHA_BETWEEN, abs=1e-12)
    within = table.loc[("within rater", "completion")]
    assert within["pairs"] == 2 and within["exact match"].value == pytest.approx(0.5)
    assert within["mean gap"].value == pytest.approx(0.5)
    assert within["alpha"].value == pytest.approx(ALPHA_WITHIN, abs=1e-12)
    natural = table.loc[("within rater", "naturalness")]  # (2, 2) and (4, 5)
    assert natural["pairs"] == 2 and natural["exact match"].value == 0.5 and natural["mean gap"].value == 0.5
    lo, hi = between["alpha"].low, between["alpha"].high
    assert lo <= between["alpha"].value <= hi or math.isnan(lo)


def test_spearman_against_the_benchmark_matches_the_hand_computation():
    assert spearman([1, 2.5, 3, 3.5, 5], BENCH) == pytest.approx(RHO_COMPLETION, abs=1e-12)
    table = human_vs_benchmark(_rows(), n_resamples=500, seed=0).set_index("domain")
    meta = table.loc["metaworld"]
    assert meta["clips"] == 5 and meta["tasks"] == 5 and meta["resampled"] == "tasks"
    assert meta["rho"].value == pytest.approx(RHO_COMPLETION, abs=1e-12)
    assert meta["mean human"] == pytest.approx((np.mean([1, 2.5, 3, 3.5, 5]) - 1) / 4)
    assert meta["mean benchmark"] == pytest.approx(np.mean(BENCH))
    assert -1 <= meta["rho"].low <= meta["rho"].value <= meta["rho"].high <= 1
    # naturalness: clip means 1.5 2 4 3.5 5 (ranks 1 2 4 3 5) vs ranks 1 3 2 5 4: Σd² = 0+1+4+4+1 = 10 → 0.5
    assert table.loc["naturalness, pooled", "rho"].value == pytest.approx(0.5, abs=1e-12)


def test_bootstrap_intervals_are_reproducible_and_use_the_given_resamples():
    a = reliability(_rows(), n_resamples=200, seed=3)
    b = reliability(_rows(), n_resamples=200, seed=3)
    c = reliability(_rows(), n_resamples=200, seed=4)
    def bounds(t):
        return [(e.low, e.high) for col in ("exact match", "mean gap", "alpha", "rho") for e in t[col]]

    assert bounds(a) == bounds(b) and bounds(a) != bounds(c)


def test_agreement_command_reads_the_exported_csv(tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    df = _rows()
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(df.columns))
        writer.writeheader()
        writer.writerows(df.to_dict("records"))
    assert analysis_main(["agreement", str(path), "--out", str(tmp_path / "out"), "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "| between raters | completion | 5 | 60% [" in out and f"{ALPHA_BETWEEN:.2f} [" in out
    assert "| metaworld | 5 | 5 |" in out
    assert (tmp_path / "out" / "agreement.json").is_file()
    report = agreement_report(df, 100)
    assert report.to_json()["reliability"][2]["alpha"]["value"] == pytest.approx(ALPHA_BETWEEN)
    assert analysis_main(["agreement", str(tmp_path / "missing.csv")]) == 1
