"""A Ray cluster of real nodes on one machine: each node in its own network namespace, joined by veth
links to a bridge in the head's namespace, so Ray's traffic crosses a network between node addresses
as it would between machines. Needs root and iproute2's `ip`; used by the two-node test and by
scripts/benchmark_ray.py.

Teardown kills the processes of each namespace by id (`ip netns pids`), never with `ray stop`: network
namespaces share the machine's process table and `ray stop` kills every Ray process it finds by name,
other users' clusters included.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..runtime.ray_executor import LOOPBACK_SWITCH

SUBNET = "10.77.0"  # private to the namespaces: the machine's own network never sees it
PORT = 6379
STORE_BYTES = 100 * 1024 * 1024  # the object store holds only small tasks and outcomes here
START_SECONDS = 120  # `ray start` on a busy 2-core machine takes 5-20 s
NODES_SCRIPT = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
print(json.dumps([{"id": n["NodeID"], "address": n["NodeManagerAddress"], "alive": n["Alive"]}
                  for n in ray.nodes()]))
"""


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None when they can (a probe namespace is made and deleted)."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"lpprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class Cluster:
    """`nodes` Ray nodes with `num_cpus` each: node 0 is the head. Use as a context manager: namespaces,
    processes and temporary folders are removed on exit, also after a failure half-way through start."""

    def __init__(self, nodes: int, num_cpus: int = 1):
        tag = secrets.token_hex(3)  # unique per cluster, so runs at the same time never share a name
        self.namespaces = [f"lp{tag}n{i}" for i in range(nodes)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
        self.num_cpus = num_cpus
        self.head_address = f"{self.addresses[0]}:{PORT}"
        self.root = Path(tempfile.mkdtemp(prefix="lpray", dir="/tmp"))  # Ray's socket paths must fit 107 bytes
        self.ray = str(Path(sys.executable).parent / "ray")
        # A token of this cluster's own: every node and driver gets it, nothing is read from ~/.ray.
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                    "RAY_USAGE_STATS_ENABLED": "0"}
        # The loopback-only switch of one-machine Ray (tests set it) refuses a second node: drop it.
        self.env.pop(LOOPBACK_SWITCH, None)
        self._made: list[str] = []

    def __enter__(self) -> Cluster:
        try:
            self._network()
            self._start(0)
            for node in range(1, len(self.namespaces)):
                self._start(node)
            self.wait_for(len(self.namespaces))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command(self, node: int, *argv: str) -> list[str]:
        """`argv` run inside node's namespace (give it env=self.env so it can join the cluster)."""
        return ["ip", "netns", "exec", self.namespaces[node], *argv]

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's nodes as Ray's GCS lists them (dead ones included): id, address, alive."""
        done = subprocess.run(self.command(0, sys.executable, "-c", NODES_SCRIPT, self.head_address),
                              capture_output=True, text=True, env=self.env, timeout=START_SECONDS)
        if done.returncode != 0:
            raise RuntimeError(f"listing the Ray nodes failed: {done.stderr.strip()[-2000:]}")
        nodes: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        return nodes

    def node_id(self, node: int) -> str:
        return next(n["id"] for n in self.nodes() if n["alive"] and n["address"] == self.addresses[node])

    def wait_for(self, alive: int) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            count = sum(n["alive"] for n in self.nodes())
            if count == alive:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray cluster has {count} live nodes, expected {alive}")
            time.sleep(1)

    def pids(self, node: int) -> list[int]:
        listed = subprocess.run(["ip", "netns", "pids", self.namespaces[node]], capture_output=True, text=True)
        return [int(p) for p in listed.stdout.split()]

    def kill(self, node: int) -> None:
        """Every process of the node (raylet, workers, their solver processes): the node dies. Repeated
        until none is left, since a process may start a child between the listing and the kill."""
        deadline = time.monotonic() + 10
        while (pids := self.pids(node)) and time.monotonic() < deadline:
            self._signal(pids, signal.SIGKILL)
            time.sleep(0.05)

    def is_running(self, node: int) -> bool:
        return bool(self.pids(node))

    def restart(self, node: int) -> None:
        """Start a worker node again after kill(); waits until every node is alive."""
        self._start(node)
        self.wait_for(len(self.namespaces))

    def close(self, grace: float = 10.0) -> None:
        for node in range(len(self._made)):
            self._signal(self.pids(node), signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(self.pids(n) for n in range(len(self._made))) and time.monotonic() < deadline:
            time.sleep(0.2)
        for node in range(len(self._made)):
            self.kill(node)
        for name in self._made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._made.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def _signal(pids: list[int], sig: int) -> None:
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _network(self) -> None:
        for name in self.namespaces:
            _ip("netns", "add", name)
            self._made.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
        head = self.namespaces[0]
        _ip("-n", head, "link", "add", "br0", "type", "bridge")
        _ip("-n", head, "addr", "add", f"{self.addresses[0]}/24", "dev", "br0")
        _ip("-n", head, "link", "set", "br0", "up")
        for node, name in enumerate(self.namespaces[1:], start=1):
            # One end stays in the head's namespace on the bridge; the other is the node's eth0.
            _ip("-n", head, "link", "add", f"veth{node}", "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("-n", head, "link", "set", f"veth{node}", "master", "br0", "up")
            _ip("-n", name, "addr", "add", f"{self.addresses[node]}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")

    def _start(self, node: int) -> None:
        temp = self.root / f"n{node}"
        temp.mkdir(exist_ok=True)
        role = ["--head", "--port", str(PORT), "--include-dashboard", "false"] if node == 0 else \
            ["--address", self.head_address]
        argv = self.command(node, self.ray, "start", *role, "--node-ip-address", self.addresses[node],
                            "--num-cpus", str(self.num_cpus), "--object-store-memory", str(STORE_BYTES),
                            "--temp-dir", str(temp), "--disable-usage-stats")
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=START_SECONDS)
        if done.returncode != 0:
            raise RuntimeError(f"ray start on node {node} failed: {done.stderr.strip()[-2000:]}")
