import os

import pytest

from logicpipe.runtime.ray_executor import LOOPBACK_SWITCH

os.environ[LOOPBACK_SWITCH] = "0"  # before ray is imported: every port of the test Ray stays on 127.0.0.1


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray for the whole session, on 127.0.0.1 with 2 CPUs; shut down after the last test."""
    import ray  # in the test extra: the Ray tests run in CI, never skip

    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)
    yield ray
    ray.shutdown()
