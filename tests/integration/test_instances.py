"""Several connector instances on one PostgreSQL database, every request sent to a random
instance (a load balancer without affinity): overlapping Create Payment, settle, refund and
cancel requests for the same payments charge once each in the out-of-process stub's ledger and
every instance answers byte for byte alike; an instance SIGKILLed with acquirer calls in flight
leaves its payments to the others (taken over once its leases expire), its callbacks are
delivered, one attempt at a time; `audit verify` passes on the shared store."""
import random
import subprocess
import threading
import time

import pytest

from conftest import BIN, CALLBACK_ARGS, CALLBACK_SECRET, create_body, ledger
from receiver import callback_body, verify
from test_postgres import BASE_URI, pg_uri  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(not BASE_URI, reason="IDEMPAY_TEST_PG_URI is not set: no PostgreSQL server")

# Short leases and sweeps: a dead instance's work passes to the others within seconds.
SHARED_ARGS = ["--lease-ms", "2000", "--sweep-interval-ms", "300", "--follow-timeout-ms", "8000"]


def slow_stub(stubs, latency_ms):
    """The out-of-process stub, answering each call after `latency_ms`."""
    return stubs("--latency-ms", str(latency_ms), "--pending-delay-ms", "1000")


def instances(connector_factory, stub, pg_uri, count, extra=()):
    return [connector_factory(acquirer=stub.url, extra_args=["--store", pg_uri, *SHARED_ARGS, *CALLBACK_ARGS, *extra])
            for _ in range(count)]


def requests_for(pid, index):
    """The requests of payment `pid`: its Create Payment, then settle + partial refund for even
    ones, cancel for odd ones."""
    create = ("/payments", create_body(pid, value=10))
    if index % 2 == 0:
        return create, [(f"/payments/{pid}/settlements", {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}),
                        (f"/payments/{pid}/refunds", {"paymentId": pid, "requestId": f"r-{pid}", "value": 4})]
    return create, [(f"/payments/{pid}/cancellations", {"paymentId": pid, "requestId": f"c-{pid}"})]


def overlapping(nodes, path, body, copies):
    """`copies` identical requests at once, each to a random instance."""
    answers = [None] * copies

    def send(i):
        answers[i] = random.choice(nodes).post(path, body)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(copies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def run_payment(nodes, pid, index, seen):
    create, operations = requests_for(pid, index)
    seen[(create[0], pid)] = overlapping(nodes, *create, 4)
    for path, body in operations:
        seen[(path, pid)] = overlapping(nodes, path, body, 3)


@pytest.mark.parametrize("count", [2, 3])
def test_overlapping_requests_on_several_instances_charge_once_and_answer_alike(connector_factory, stubs,
                                                                                 pg_uri, count):
    stub = slow_stub(stubs, 40)
    nodes = instances(connector_factory, stub, pg_uri, count)
    payments = [f"multi{count}-{i}" for i in range(16)]
    seen = {}
    threads = [threading.Thread(target=run_payment, args=(nodes, pid, i, seen)) for i, pid in enumerate(payments)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # Every request asked again of every instance: one answer, the same bytes everywhere, and
    # what the overlapping requests were told (nothing else but a retryable refusal).
    retried = 0
    for i, pid in enumerate(payments):
        create, operations = requests_for(pid, i)
        for path, body in [create, *operations]:
            finals = {node.post(path, body)[:2] for node in nodes}
            assert len(finals) == 1, f"{path}: instances disagree: {finals}"
            final = finals.pop()
            assert final[0] == 200, final
            for status, raw, _ in seen[(path, pid)]:
                if status == 503:
                    retried += 1
                    continue
                assert (status, raw) == final, f"{path}: an overlapping request was told {status} {raw!r}"
    assert retried <= len(seen), f"{retried} retryable refusals"

    book = ledger(stub)
    for i, pid in enumerate(payments):
        assert book["authorizations"][pid]["calls"] == 1, pid
        if i % 2 == 0:
            assert book["captures"][f"{pid}/s-{pid}"]["calls"] == 1
            assert book["refunds"][f"{pid}/r-{pid}"]["calls"] == 1
        else:
            assert book["cancellations"][f"{pid}/c-{pid}"]["calls"] == 1

    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_killed_instance_leaves_its_payments_and_callbacks_to_the_others(connector_factory, stubs, pg_uri,
                                                                           receiver):
    stub = slow_stub(stubs, 1500)
    r = receiver()
    doomed, survivor = instances(connector_factory, stub, pg_uri, 2)
    payments = [f"taken-{i}" for i in range(6)]
    bodies = {pid: create_body(pid, value=10, callbackUrl=r.url()) for pid in payments}

    def create(pid):
        try:
            doomed.post("/payments", bodies[pid])
        except Exception:  # the instance dies mid-call: the gateway sees a reset and retries later
            pass

    threads = [threading.Thread(target=create, args=(pid,)) for pid in payments]
    for t in threads:
        t.start()
    time.sleep(0.8)  # every authorization has reached the stub, none has been answered
    doomed.process.kill()
    for t in threads:
        t.join()

    # The survivor takes the payments over once the dead instance's leases expire, and tells
    # the gateway by callback: one delivery per payment, signed, approved.
    assert r.wait_for(lambda rv: len(rv.processed) >= len(payments), timeout=30), \
        f"{len(r.processed)} of {len(payments)} callbacks"
    bodies_seen = {callback_body(req)["paymentId"]: req for req in r.requests}
    assert set(bodies_seen) == set(payments)
    for req in bodies_seen.values():
        assert verify(CALLBACK_SECRET, req["headers"], req["body"])
        assert callback_body(req)["status"] == "approved"
    assert r.max_active <= 4

    # The gateway's retries, to the survivor: the approved answer, no second charge.
    for pid in payments:
        status, raw, _ = survivor.post("/payments", bodies[pid])
        assert status == 200 and b'"approved"' in raw
        assert raw == bodies_seen[pid]["body"]
    book = ledger(stub)
    assert all(book["authorizations"][pid]["calls"] == 1 for pid in payments)
    time.sleep(1)
    delivered = [callback_body(req)["paymentId"] for req in r.requests]
    assert sorted(delivered) == sorted(payments), "a callback was attempted twice"

    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_three_instances_behind_haproxy_lose_one_and_charge_once(connector_factory, stubs, pg_uri, base_dir):
    """deploy/haproxy.cfg as shipped, in front of three instances: one is SIGKILLed under load;
    the health checks take it out, the gateway's retries of what failed get the same answers
    from the others, and every payment is charged and settled once."""
    import os
    import pathlib
    from conftest import free_port, request
    stub = slow_stub(stubs, 20)
    nodes = instances(connector_factory, stub, pg_uri, 3)
    lb_port = free_port()
    config = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
    env = dict(os.environ, IDEMPAY_LB_BIND=f"127.0.0.1:{lb_port}",
               **{f"IDEMPAY_INSTANCE_{i + 1}": f"127.0.0.1:{n.port}" for i, n in enumerate(nodes)})
    log = open(base_dir / "haproxy.log", "wb")
    lb = subprocess.Popen(["haproxy", "-f", str(config), "-db"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if request(lb_port, "GET", "/health", None, {})[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)

        def until_answered(path, body):
            """The gateway: retries a failed or retryable request until it is answered."""
            for _ in range(100):
                try:
                    status, raw, _ = request(lb_port, "POST", path, body, None)
                except OSError:
                    status, raw = 0, b""
                if status == 200:
                    return raw
                time.sleep(0.1)
            raise AssertionError(f"{path} never answered")

        payments = [f"lb-{i}" for i in range(24)]
        answers = {}

        def pay(pid):
            answers[pid] = (until_answered("/payments", create_body(pid, value=10)),
                            until_answered(f"/payments/{pid}/settlements",
                                           {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}))

        threads = [threading.Thread(target=pay, args=(pid,)) for pid in payments]
        for t in threads[:12]:
            t.start()
        time.sleep(0.3)
        nodes[1].process.kill()  # mid-load, with requests in flight on it
        for t in threads[12:]:
            t.start()
        for t in threads:
            t.join()

        book = ledger(stub)
        for pid in payments:
            created, settled = answers[pid]
            assert b'"approved"' in created
            assert until_answered("/payments", create_body(pid, value=10)) == created
            assert book["authorizations"][pid]["calls"] == 1, pid
            assert book["captures"][f"{pid}/s-{pid}"]["calls"] == 1, pid
    finally:
        lb.terminate()
        lb.wait(timeout=10)
        log.close()
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
