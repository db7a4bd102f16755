"""The shared XLA compile cache is keyed by the host CPU: a cache written on one CPU is never loaded on another."""

from __future__ import annotations

import os

import pytest

from bird.jax_cache import host_cpu_key

CORE = """processor\t: {n}
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6238R CPU @ 2.20GHz
cpu MHz\t\t: {mhz}
flags\t\t: {flags}
bogomips\t: 4389.{n}
"""
AVX512 = "fpu sse sse2 avx avx2 avx512f avx512bw avx512vl"


def _cpuinfo(flags: str = AVX512, cores: int = 2, **changes: str) -> str:
    text = "\n".join(CORE.format(n=n, mhz=2200 + 37 * n, flags=flags) for n in range(cores))
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def test_the_cpu_key_ignores_per_core_lines_and_flag_order():
    assert host_cpu_key(_cpuinfo(cores=4)) == host_cpu_key(_cpuinfo(" ".join(reversed(AVX512.split())), cores=1))


@pytest.mark.parametrize("other", [
    _cpuinfo(AVX512.replace(" avx512f avx512bw avx512vl", "")),  # the same model without AVX-512 (e.g. a VM)
    _cpuinfo(Gold="Silver"),  # another model with the same flags
    _cpuinfo(GenuineIntel="AuthenticAMD"),
])
def test_the_cpu_key_differs_when_the_cpu_differs(other):
    assert host_cpu_key(other) != host_cpu_key(_cpuinfo())


def test_the_cpu_key_reads_arm_cpuinfo():
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes {x}\nCPU implementer\t: 0x41\n"
    assert host_cpu_key(arm.format(x="sve")) != host_cpu_key(arm.format(x="")) != host_cpu_key("")


def test_enable_compilation_cache_points_jax_at_a_folder_of_this_hosts_cpu(tmp_path, monkeypatch):
    jax = pytest.importorskip("jax")
    from bird import jax_cache

    monkeypatch.setenv("BIRD_JAX_CACHE", str(tmp_path))
    monkeypatch.setattr(jax_cache, "_DONE", False)
    before = jax.config.jax_compilation_cache_dir
    try:
        jax_cache.enable_compilation_cache()
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / host_cpu_key())
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            assert host_cpu_key() == host_cpu_key(f.read()) != host_cpu_key(f"flags : {AVX512}")
