"""Several connector instances on one PostgreSQL database, every request sent to a random
instance (a load balancer without affinity): overlapping Create Payment, settle, refund and
cancel requests for the same payments charge once each in the out-of-process stub's ledger and
every instance answers byte for byte alike; an instance SIGKILLed with acquirer calls in flight
leaves its payments to the others (taken over once its leases expire), its callbacks are
delivered, one attempt at a time; `audit verify` passes on the shared store."""
import json
import random
import subprocess
import threading
import time

import pytest

from conftest import BIN, CALLBACK_ARGS, CALLBACK_SECRET, create_body, ledger
from receiver import callback_body, verify
from tcp_proxy import CuttableProxy
from test_merchants import ALPHA, AS_ALPHA, AS_BETA, BETA
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


def test_a_create_retried_to_an_instance_that_never_saw_it_gets_the_stored_answer(connector_factory, stubs, pg_uri,
                                                                                   base_dir):
    """An instance decides a Create Payment it has never seen as for a new payment, without
    reading the database first: the record is written only where none is, so for a payment
    another instance made, that write is refused and the request is answered from the record
    then read. The gateway's retry to the other instance gets the first answer byte for byte
    and no second charge, overlapping copies of the retry too (they wait for the record as
    they would for a read); that instance records the arrivals as duplicates, never a receipt
    of its own (event log); a settlement sent with them waits for the record instead of finding
    no payment; the shared trail verifies."""
    stub = stubs()
    shared = ["--store", pg_uri, *SHARED_ARGS, *CALLBACK_ARGS]
    first = connector_factory(acquirer=stub.url, extra_args=shared)
    events = base_dir / "retried-elsewhere-events.jsonl"
    other = connector_factory(acquirer=stub.url, extra_args=[*shared, "--event-log", str(events)])
    payments = [f"seen-once-{i}" for i in range(12)]
    answers = {}
    for pid in payments:
        status, raw, _ = first.post("/payments", create_body(pid, value=10))
        assert status == 200 and b'"approved"' in raw, raw
        answers[pid] = raw

    settle = {pid: {"paymentId": pid, "requestId": f"s-{pid}", "value": 10} for pid in payments}
    retried, settled = {}, {}
    start = threading.Barrier(3 * len(payments))

    def retry(pid):
        start.wait()
        answer = other.post("/payments", create_body(pid, value=10))[:2]
        retried.setdefault(pid, []).append(answer)

    def settlement(pid):
        start.wait()
        settled[pid] = other.post(f"/payments/{pid}/settlements", settle[pid])[:2]

    threads = [threading.Thread(target=f, args=(pid,)) for pid in payments for f in (retry, retry, settlement)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for pid in payments:
        assert retried[pid] == [(200, answers[pid])] * 2, pid
        assert settled[pid][0] == 200, settled[pid]
        assert first.post(f"/payments/{pid}/settlements", settle[pid])[:2] == settled[pid]

    book = ledger(stub)
    for pid in payments:
        assert book["authorizations"][pid]["calls"] == 1, pid
        assert book["captures"][f"{pid}/s-{pid}"]["calls"] == 1, pid

    def logged():
        return [json.loads(line) for line in events.read_text().splitlines() if line.strip()]

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and \
            sum(e.get("event") == "event_duplicate_reused" for e in logged()) < 2 * len(payments):
        time.sleep(0.2)
    kinds = [e["event"] for e in logged() if e.get("paymentId") in answers]
    assert kinds.count("event_duplicate_reused") == 2 * len(payments), kinds
    assert "event_received" not in kinds and "event_processing_started" not in kinds, kinds
    for pid in payments[:3]:
        inspected = subprocess.run([BIN, "inspect", pid, "--json", "--store", pg_uri], capture_output=True, check=True)
        trail = [e["kind"] for e in json.loads(inspected.stdout)["audit"]]
        assert trail.count("event_received") == 1 and trail.count("event_duplicate_reused") == 2, trail
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_another_merchants_retry_to_an_instance_that_never_saw_the_payment_is_refused(connector_factory, stubs,
                                                                                     pg_uri):
    """The second merchant sends the first one's very Create Payment to an instance that never
    saw it (decided there as a new payment, without a read): the write is refused, and the
    answer is the refusal a foreign payment always gets, with nothing of the owner's answer in
    it and nothing sent to the acquirer; the owner's retry there still gets its own answer."""
    stub = stubs()
    shared = ["--store", pg_uri, *SHARED_ARGS, *CALLBACK_ARGS]
    first, other = (connector_factory(acquirer=stub.url, extra_args=shared, merchants=[ALPHA, BETA])
                    for _ in range(2))
    body = create_body("alpha-shared-1", value=40)
    status, raw, _ = first.post("/payments", body, AS_ALPHA)
    assert status == 200
    book = ledger(stub)
    status, foreign, _ = other.post("/payments", body, AS_BETA)
    assert status == 400 and json.loads(foreign)["code"] == "payment-conflict", foreign
    for issued in ("tid", "authorizationId", "nsu"):
        assert json.loads(raw)[issued].encode() not in foreign
    assert ledger(stub) == book, "another merchant's retry reached the acquirer"
    assert other.post("/payments", body, AS_ALPHA)[:2] == (200, raw)


def test_a_killed_instance_leaves_its_payments_and_callbacks_to_the_others(connector_factory, stubs, pg_uri,
                                                                           receiver):
    stub = slow_stub(stubs, 1500)
    # Every attempt takes a moment, and the first ones fail: the entries go back to the outbox,
    # where both survivors' sweeps find them and compete for the claims.
    r = receiver(script=["503"] * 8, default="slow", slow_seconds=0.2)
    doomed, survivor, other = instances(connector_factory, stub, pg_uri, 3)
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
    time.sleep(1)
    # One instance at a time attempts a delivery: no attempt of a webhook-id starts before the
    # one before it was answered.
    by_id = {}
    for req in r.requests:
        by_id.setdefault(req["headers"]["webhook-id"], []).append(req)
    for delivery_id, attempts in by_id.items():
        attempts.sort(key=lambda a: a["started"])
        for before, after in zip(attempts, attempts[1:]):
            assert "ended" in before and after["started"] >= before["ended"], f"{delivery_id} attempted twice at once"
    delivered = [callback_body(req)["paymentId"] for req in r.requests if req["headers"]["webhook-id"] in r.processed
                 and r.processed[req["headers"]["webhook-id"]] == req["body"]]
    assert sorted(set(delivered)) == sorted(payments)
    bodies_seen = {callback_body(req)["paymentId"]: req for req in r.requests
                   if r.processed.get(req["headers"]["webhook-id"]) == req["body"]}
    assert set(bodies_seen) == set(payments)
    for req in bodies_seen.values():
        assert verify(CALLBACK_SECRET, req["headers"], req["body"])
        assert callback_body(req)["status"] == "approved"
    assert r.max_active <= 2 * 4  # --callback-max-per-destination per instance

    # The gateway's retries, to the survivor: the approved answer, no second charge.
    for pid in payments:
        status, raw, _ = survivor.post("/payments", bodies[pid])
        assert status == 200 and b'"approved"' in raw
        assert raw == bodies_seen[pid]["body"]
    book = ledger(stub)
    assert all(book["authorizations"][pid]["calls"] == 1 for pid in payments)
    # Delivered once: no attempt after the one the receiver accepted (the 8 scripted failures
    # came first).
    for delivery_id, attempts in by_id.items():
        statuses = [a.get("status") for a in attempts]
        assert statuses[-1] == 200 and statuses.count(200) == 1, f"{delivery_id}: {statuses}"
    assert len(by_id) == len(payments)

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
    nodes = instances(connector_factory, stub, pg_uri, 3, extra=["--trusted-proxies", "127.0.0.1/32"])
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
            # A settlement in flight on the killed instance is resumed by another under the same
            # acquirer key once its lease expires: a second call, one capture (the acquirer acts
            # once per key).
            capture = book["captures"][f"{pid}/s-{pid}"]
            assert capture["succeeded"] and capture["amount"] == 10 and capture["calls"] <= 2, (pid, capture)
    finally:
        lb.terminate()
        lb.wait(timeout=10)
        log.close()
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture
def replicated_pg():
    """A primary and a synchronous streaming standby (scripts/pg-local.sh), on free ports;
    yields (multi-host URI, primary dir, standby dir)."""
    import pathlib
    import shutil
    import tempfile
    script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "pg-local.sh"
    root = pathlib.Path(tempfile.mkdtemp(prefix="idempay-failover-", dir="/tmp"))
    root.chmod(0o755)  # the server runs as the postgres user
    primary, standby = root / "primary", root / "standby"
    run = lambda *args: subprocess.run(["bash", str(script), *args], check=True, capture_output=True,  # noqa: E731
                                       text=True).stdout.strip()
    try:
        first = run("start", str(primary))
        first_port = first.rsplit(":", 1)[1].split("/")[0]
        second = run("standby", str(standby), first_port)
        second_port = second.rsplit(":", 1)[1].split("/")[0]
        yield (f"postgresql://postgres@127.0.0.1:{first_port},127.0.0.1:{second_port}/postgres"
               f"?target_session_attrs=read-write&connect_timeout=2"), primary, standby, run
    finally:
        for d in (standby, primary):
            subprocess.run(["bash", str(script), "stop", str(d)], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_the_primary_is_lost_and_the_standby_promoted(connector_factory, stubs, replicated_pg):
    """The primary SIGKILLed mid-load and its synchronous standby promoted: the instances
    reconnect (multi-host URI, target_session_attrs=read-write); every answer acknowledged
    before, during or after the failover is answered the same afterwards, by every instance;
    requests during it get retryable errors or `undefined`, never a wrong answer; one charge each."""
    uri, primary, standby, run = replicated_pg
    stub = slow_stub(stubs, 20)
    nodes = instances(connector_factory, stub, uri, 2)
    acknowledged = {}  # (path, pid) -> the 200 answer
    refused = []
    stop = threading.Event()

    def gateway(worker):
        for i in range(10_000):
            if stop.is_set():
                return
            pid = f"fo-{worker}-{i}"
            for path, body in [("/payments", create_body(pid, value=10)),
                               (f"/payments/{pid}/settlements", {"paymentId": pid, "requestId": f"s-{pid}",
                                                                "value": 10})]:
                for _ in range(300):  # retries until answered, as the gateway does
                    try:
                        status, raw, _ = random.choice(nodes).post(path, body)
                    except OSError:
                        status, raw = 0, b""
                    if status == 200 and b'"undefined"' not in raw:
                        acknowledged[(path, pid)] = raw
                        break
                    refused.append(status)
                    assert status in (0, 200, 500, 502, 503), (status, raw)
                    time.sleep(0.05)
                else:
                    raise AssertionError(f"{path} for {pid} never answered after the failover")

    workers = [threading.Thread(target=gateway, args=(w,)) for w in range(4)]
    for w in workers:
        w.start()
    time.sleep(2)
    before = len(acknowledged)
    run("crash", str(primary))  # the machine is lost: no shutdown, no checkpoint
    time.sleep(0.5)
    run("promote", str(standby))
    time.sleep(3)
    stop.set()
    for w in workers:
        w.join()
    assert before > 0 and len(acknowledged) > before, "no load before or after the failover"

    book = ledger(stub)
    for (path, pid), raw in acknowledged.items():
        body = create_body(pid, value=10) if path == "/payments" else \
            {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}
        for node in nodes:
            status, again, _ = node.post(path, body)
            assert (status, again) == (200, raw), f"{path} for {pid} changed after the failover"
        # One charge and one capture, under the payment's keys. (Not one call: a request on a
        # reused keep-alive connection that fails before any answer is sent again once, by
        # design — the acquirer's idempotency key makes that safe — and the failover's load
        # makes that race likely.)
        if path == "/payments":
            assert book["authorizations"][pid]["charges"] == 1, pid
        else:
            capture = book["captures"][f"{pid}/s-{pid}"]
            assert capture["succeeded"] and capture["amount"] == 10, pid
    verified = subprocess.run([BIN, "audit", "verify", "--store", uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_an_instance_cut_off_from_the_database_answers_retryably(connector_factory, stubs, pg_uri):
    """One instance reaches PostgreSQL through a proxy that stops forwarding mid-load: its
    requests get retryable errors (within the store's 5 s round-trip deadline, not a hang), the
    other instance carries on and takes its unfinished payments over; once the link is back,
    every acknowledged answer is the same on both, with one acquirer call each."""
    import urllib.parse
    stub = slow_stub(stubs, 20)
    parts = urllib.parse.urlsplit(pg_uri)
    proxy = CuttableProxy(parts.port)
    proxied_uri = urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    try:
        cut_off = instances(connector_factory, stub, proxied_uri, 1)[0]
        healthy = instances(connector_factory, stub, pg_uri, 1)[0]
        acknowledged, outcomes = {}, []

        def pay(node, pid):
            body = create_body(pid, value=10)
            started = time.time()
            try:
                status, raw, _ = node.post("/payments", body)
            except OSError:
                status, raw = 0, b""
            outcomes.append((node is cut_off, status, time.time() - started))
            assert str(proxy.port).encode() not in raw, raw  # the database's address stays in the log
            if status == 200 and b'"undefined"' not in raw:
                acknowledged[pid] = raw

        first = [threading.Thread(target=pay, args=(random.choice([cut_off, healthy]), f"cut-a-{i}"))
                 for i in range(10)]
        for t in first:
            t.start()
        for t in first:
            t.join()
        proxy.forwarding.clear()  # the partition
        during = [threading.Thread(target=pay, args=(node, f"cut-b-{i}-{n}"))
                  for i in range(6) for n, node in enumerate([cut_off, healthy])]
        for t in during:
            t.start()
        for t in during:
            t.join()
        status, health, _ = cut_off.get("/health", {})
        assert status == 503
        assert str(proxy.port).encode() not in health and b"127.0.0.1" not in health  # nothing for strangers
        # Its store takes no write: not ready within the probe's two seconds (readiness never
        # waits for the store, it answers from the last probe).
        deadline = time.time() + 10
        while cut_off.get("/health/ready", {})[0] != 503:
            assert time.time() < deadline, "readiness did not notice the partition"
            time.sleep(0.2)
        assert healthy.get("/health/ready", {})[0] == 200
        proxy.forwarding.set()  # the link is back

        cut_answers = [(s, d) for on_cut, s, d in outcomes[10:] if on_cut]
        # New payments cannot be stored there: a retryable refusal, never a success.
        assert cut_answers and all(s == 503 for s, _ in cut_answers), cut_answers
        # Bounded: one round-trip deadline, not one per request queued behind it.
        assert all(d < 15 for _, d in cut_answers), cut_answers
        assert all(s == 200 for on_cut, s, _ in outcomes[10:] if not on_cut)

        # The gateway's retries, after the partition, to either instance: the same answers.
        book_before = ledger(stub)
        for pid in [f"cut-a-{i}" for i in range(10)] + [f"cut-b-{i}-{n}" for i in range(6) for n in (0, 1)]:
            answers = set()
            for node in (cut_off, healthy):
                for _ in range(100):
                    status, raw, _ = node.post("/payments", create_body(pid, value=10))
                    if status == 200 and b'"undefined"' not in raw:
                        break
                    time.sleep(0.1)
                answers.add(raw)
            assert len(answers) == 1, f"{pid}: {answers}"
            if pid in acknowledged:
                assert answers == {acknowledged[pid]}
        book = ledger(stub)
        assert all(e["charges"] <= 1 for e in book["authorizations"].values())
        assert set(book_before["authorizations"]) <= set(book["authorizations"])
        # Stopped while its link is up: it stops cleanly (in 0.1 s; 20 s once the proxy is gone).
        assert cut_off.process.terminate() == 0
    finally:
        proxy.close()
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
