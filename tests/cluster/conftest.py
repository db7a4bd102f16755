"""One small local Ray for the cluster tests (2 CPUs, small object store, no dashboard), shut down at the end."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="package")
def ray_address() -> str:
    """The GCS address of a local Ray started once for this test package; executors and launchers attach to it."""
    ray = pytest.importorskip("ray")
    context = ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False,
                       log_to_driver=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()
