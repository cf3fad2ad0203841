#!/usr/bin/env python3
"""The failover soak: idempay instances on the HA cluster of scripts/ha-local.sh under the
gateway's mixed load (tests/integration/gateway_load.py) through every fault the cluster must
survive, repeated, then the planned operations; afterwards the same checks as the short test
(tests/integration/test_ha.py): only 200s and 503s with Retry-After, each request answered
within its timeout, every 200 the same bytes on every instance, one charge, capture and refund
each in the acquirer's ledger, `audit verify` clean. Prints, per fault, the longest time without
a successful commit (median and worst), and the planned operations' failed requests (none
allowed) and retries. Run as root (Patroni runs as postgres):

    scripts/ha-soak.py [--rounds 4] [--instances 2] [--workers 4] [--via haproxy|libpq] [--keep]

with IDEMPAY_BIN (default build-release/idempay) and IDEMPAY_SANDBOX_BIN next to it. Bounded:
each fault waits at most two minutes for the cluster to recover, then the run fails."""
import argparse
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

root = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("IDEMPAY_BIN", str(root / "build-release" / "idempay"))
sys.path.insert(0, str(root / "tests" / "integration"))

from conftest import BIN, CALLBACK_ARGS, SANDBOX, Connector, Process, ledger  # noqa: E402
from gateway_load import GatewayLoad, check_after  # noqa: E402
from ha_cluster import HaCluster  # noqa: E402

SHARED_ARGS = ["--lease-ms", "2000", "--sweep-interval-ms", "300", "--follow-timeout-ms", "8000",
               "--drain-grace-ms", "500"]
LEADER_FAULTS = ["postgres-killed", "patroni-killed", "node-killed", "frozen", "node-and-instance-killed"]


class Soak:
    def __init__(self, cluster, nodes, load, stub):
        self.cluster, self.nodes, self.load, self.stub = cluster, nodes, load, stub
        self.outages = {}  # fault -> [seconds without a commit]

    def recovered(self, fault, at, settle=2):
        """Waits for the cluster to be whole again and a commit after the fault; notes the outage."""
        self.cluster.wait_healthy(timeout=120)
        self.load.wait_for_commit_sent_after(at, timeout=120)
        time.sleep(settle)
        seconds = self.load.unavailability(at, time.monotonic())
        self.outages.setdefault(fault, []).append(seconds)
        print(f"  {fault}: {seconds:.1f} s without a commit; {self.load.summary()}", flush=True)

    def new_leader(self, old, timeout=60):
        self.cluster.wait_for(lambda ms: any(m["Role"] == "Leader" and m["State"] == "running" and m["Member"] != old
                                             for m in ms), timeout, "a new leader")

    def leader_fault(self, fault):
        leader = self.cluster.leader()
        at = time.monotonic()
        if fault == "postgres-killed":  # Patroni starts it again in place: no failover
            self.cluster.kill_postgres(leader)
        elif fault == "patroni-killed":  # its PostgreSQL runs on, leaderless: demoted when Patroni returns
            self.cluster.kill_patroni(leader)
            self.new_leader(leader)
        elif fault in ("node-killed", "node-and-instance-killed"):
            self.cluster.kill_node(leader)
            if fault == "node-and-instance-killed":
                time.sleep(2)
                victim = self.nodes[0]
                self.load.set_instances(self.nodes[1:])
                victim.process.kill()
            self.new_leader(leader)
            if fault == "node-and-instance-killed":
                victim.start()
                self.load.set_instances(self.nodes)
        elif fault == "frozen":  # long enough for a new leader, then resumed: it must rejoin as a replica
            stopped = self.cluster.freeze(leader)
            self.new_leader(leader)
            time.sleep(2)
            self.cluster.signal_all(stopped, signal.SIGCONT)
        self.cluster.restart_missing()
        self.recovered(fault, at)

    def etcd_faults(self):
        at = time.monotonic()
        self.cluster.kill_etcd(1)  # a quorum remains: nothing should change
        time.sleep(10)
        self.cluster.restart_missing()
        self.recovered("one etcd member killed", at)
        at = time.monotonic()
        self.cluster.kill_etcd(1)
        self.cluster.kill_etcd(2)  # no quorum: the leader steps down once its key cannot be kept
        time.sleep(25)
        self.cluster.restart_missing()
        self.recovered("two etcd members killed (25 s)", at)

    def planned(self, name, operation):
        failures, retried = len(self.load.failures), sum(1 for r in self.load.retries if r)
        at = time.monotonic()
        operation()
        self.recovered(name, at)
        new_failures = len(self.load.failures) - failures
        print(f"  {name}: {new_failures} failed requests, {sum(1 for r in self.load.retries if r) - retried} "
              f"requests retried", flush=True)
        assert new_failures == 0, self.load.failures[failures:]

    def switchover(self):
        members = self.cluster.wait_healthy()
        leader = next(m["Member"] for m in members if m["Role"] == "Leader")
        candidate = next(m["Member"] for m in members if m["Role"] == "Sync Standby")
        self.cluster.switchover(leader, candidate)

    def rolling_postgres_restart(self):
        """Replicas first, then the leader once it has handed over (a switchover)."""
        members = self.cluster.wait_healthy()
        leader = next(m["Member"] for m in members if m["Role"] == "Leader")
        for m in members:
            if m["Member"] != leader:
                self.cluster.restart_postgres(m["Member"])
                self.cluster.wait_healthy()
        self.switchover()
        self.cluster.wait_healthy()
        self.cluster.restart_postgres(leader)

    def rolling_instance_restart(self):
        """Each instance in turn: out of the balancer, SIGTERM (drains), started again, back in."""
        for i, node in enumerate(self.nodes):
            self.load.set_instances(self.nodes[:i] + self.nodes[i + 1:])
            assert node.process.terminate() == 0
            node.start()
            self.load.set_instances(self.nodes)
            time.sleep(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="times each leader fault is repeated")
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="gateway threads")
    parser.add_argument("--via", choices=["haproxy", "libpq"], default="haproxy",
                        help="reach the primary through haproxy (Patroni's /primary) or libpq's multi-host URI")
    parser.add_argument("--keep", action="store_true", help="keep the logs (cluster, instances, stub) afterwards")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("ha-soak: run as root (Patroni runs as postgres)")
    work = pathlib.Path(tempfile.mkdtemp(prefix="idempay-ha-soak-", dir="/tmp"))
    os.chmod(work, 0o755)
    cluster = HaCluster(work / "cluster")
    uri = cluster.haproxy_uri if args.via == "haproxy" else cluster.multihost_uri
    print(f"cluster: {uri} (logs under {work})", flush=True)
    stub = Process(["acquirer-stub", "--listen", "127.0.0.1:0"], work / "stub.log", program=SANDBOX)
    nodes = [Connector(work, f"idempay{i}", acquirer=f"http://127.0.0.1:{stub.port}",
                       extra_args=["--store", uri, *SHARED_ARGS, *CALLBACK_ARGS])
             for i in range(args.instances)]
    load = GatewayLoad(nodes, workers=args.workers, tag=f"soak{int(time.time())}")
    soak = Soak(cluster, nodes, load, stub)
    started = time.monotonic()
    ok = False
    try:
        load.start()
        time.sleep(3)
        for round_ in range(args.rounds):
            print(f"round {round_ + 1} of {args.rounds}", flush=True)
            for fault in LEADER_FAULTS:
                soak.leader_fault(fault)
        soak.etcd_faults()
        soak.planned("switchover", soak.switchover)
        soak.planned("rolling PostgreSQL restart", soak.rolling_postgres_restart)
        soak.planned("rolling idempay restart", soak.rolling_instance_restart)
        load.stop()
        repeated = check_after(load, nodes, lambda: ledger(stub),
                               lambda: subprocess.run([BIN, "audit", "verify", "--store", uri],
                                                      capture_output=True, text=True))
        ok = True
    finally:
        load.stopping.set()
        for node in nodes:
            node.process.terminate()
        stub.terminate()
        cluster.stop()
    leader_failures = sum(len(soak.outages.get(f, [])) for f in LEADER_FAULTS)
    print(f"\n{leader_failures} leader failures in {time.monotonic() - started:.0f} s; {load.summary()}; "
          f"acquirer calls repeated with their idempotency key: {repeated}")
    print("seconds without a successful commit, by fault (count, median, worst):")
    for fault, seconds in soak.outages.items():
        print(f"  {fault:34} {len(seconds):3}  {statistics.median(seconds):5.1f}  {max(seconds):5.1f}")
    print("every check passed: answers, ledger, audit verify" if ok else "FAILED")
    if args.keep or not ok:
        print(f"logs kept under {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
