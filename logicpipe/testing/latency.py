"""A call of fixed wall-clock cost, run where solver calls run (an isolation worker, on any Ray node).

It stands for work that waits rather than computes (a solver service, a licence server, a model behind
the call), so scripts/benchmark_ray.py can measure what each Ray node adds without being bounded by the
cores of the one machine its nodes share.
"""

import time


def wait(payload: dict) -> str:
    time.sleep(float(payload["seconds"]))
    return f"waited {payload['seconds']} s"
