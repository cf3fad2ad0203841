"""The connector on PostgreSQL (--store postgresql://...), against a real server started by
scripts/test.sh (scripts/pg-local.sh): answers survive SIGKILL byte for byte with one charge
each, the operator commands read
the same store, `audit verify` passes, no card number is stored, and a restart of PostgreSQL
under a running connector is retryable and loses nothing."""
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from conftest import (APP_KEY, APP_TOKEN, BIN, CALLBACK_ARGS, CALLBACK_SECRET, TEST_CARDS,
                      assert_same_answers_one_charge, create_body, ledger, pay_and_settle)
from receiver import callback_body, verify
from test_callbacks import async_payment

BASE_URI = os.environ.get("IDEMPAY_TEST_PG_URI", "")
pytestmark = pytest.mark.skipif(not BASE_URI, reason="IDEMPAY_TEST_PG_URI is not set: no PostgreSQL server")


def psql(uri, sql):
    out = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", uri, "-c", sql],
                         capture_output=True, check=True, text=True)
    return out.stdout


@pytest.fixture
def pg_uri():
    """A database of its own on the test server, dropped afterwards."""
    name = f"idempay_test_{random.randrange(1 << 40)}"
    psql(BASE_URI, f"CREATE DATABASE {name}")
    parts = urllib.parse.urlsplit(BASE_URI)
    yield urllib.parse.urlunsplit(parts._replace(path="/" + name))
    psql(BASE_URI, f"DROP DATABASE {name} WITH (FORCE)")


def test_payments_on_postgresql_survive_sigkill_with_one_charge_each(connector_factory, stub_server, pg_uri):
    connector = connector_factory(acquirer=stub_server.url, extra_args=["--store", pg_uri])
    answers = pay_and_settle(connector, "pg", 12)

    connector.process.kill()
    connector.start()
    assert_same_answers_one_charge(connector, answers, stub_server, "pg", 12)

    # The operator commands read the same database while the connector runs.
    inspected = subprocess.run([BIN, "inspect", "pg-0", "--json", "--store", pg_uri], capture_output=True, check=True)
    assert json.loads(inspected.stdout)["state"] == "settled"
    assert connector.process.terminate() == 0
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # G6: no card number in any stored value.
    tables = psql(pg_uri, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'idempay'"
                          " AND table_name LIKE 'kv_%'").split()
    assert "kv_payments" in tables
    for table in tables:
        stored = psql(pg_uri, f"SELECT encode(key, 'escape') || encode(value, 'escape') FROM idempay.{table}")
        assert not [card for card in TEST_CARDS if card in stored], table


def test_migrate_creates_the_schema_and_serve_without_migrating_needs_it(connector_factory, pg_uri, tmp_path):
    refused = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                              "--store", pg_uri, "--no-migrate"], capture_output=True, timeout=30)
    assert refused.returncode != 0
    assert b"idempay migrate" in refused.stderr
    migrated = subprocess.run([BIN, "migrate", "--store", pg_uri], capture_output=True, timeout=30)
    assert migrated.returncode == 0, migrated.stderr
    assert psql(pg_uri, "SELECT max(version) FROM idempay.schema_version").strip() == "2"
    # A database of version 1 (before the commit marks) is upgraded in place.
    psql(pg_uri, "DROP TABLE idempay.commit_marks; DELETE FROM idempay.schema_version WHERE version = 2")
    refused = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                              "--store", pg_uri, "--no-migrate"], capture_output=True, timeout=30)
    assert refused.returncode != 0 and b"commit_marks" in refused.stderr, refused.stderr
    assert subprocess.run([BIN, "migrate", "--store", pg_uri], capture_output=True, timeout=30).returncode == 0
    assert psql(pg_uri, "SELECT max(version) FROM idempay.schema_version").strip() == "2"
    connector = connector_factory(extra_args=["--store", pg_uri, "--no-migrate"])
    status, raw, _ = connector.post("/payments", create_body("pg-migrated"))
    assert status == 200 and json.loads(raw)["status"] == "approved"


def test_a_postgresql_restart_is_retryable_and_loses_nothing(connector_factory, stub_server):
    """PostgreSQL stopped under a running connector: requests that need it get a retryable
    error (never a success, never a crash); once it is back, on the same address, the retries
    succeed, every earlier answer is the same, and nothing was charged twice."""
    pg_local = str(pathlib.Path(__file__).resolve().parents[2] / "scripts" / "pg-local.sh")
    # Under /tmp: the cluster's owner (postgres, when the tests run as root) must reach it.
    cluster = pathlib.Path(tempfile.mkdtemp(prefix="idempay-pg-restart-", dir="/tmp"))
    os.chmod(cluster, 0o755)
    uri = subprocess.run([pg_local, "start", str(cluster)], capture_output=True, text=True, check=True).stdout.strip()
    port = urllib.parse.urlsplit(uri).port
    try:
        connector = connector_factory(acquirer=stub_server.url, extra_args=["--store", uri])
        answers = pay_and_settle(connector, "pgr", 4)

        subprocess.run([pg_local, "stop", str(cluster)], check=True)
        status, raw, headers = connector.post("/payments", create_body("pgr-during"))
        assert status == 503, raw  # retryable: nothing was done
        assert headers.get("retry-after") == "1", headers  # and says when to try again
        assert connector.process.proc.poll() is None  # still serving

        subprocess.run([pg_local, "start", str(cluster), str(port)], check=True, capture_output=True)
        for _ in range(20):
            status, raw, _ = connector.post("/payments", create_body("pgr-during"))
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200 and json.loads(raw)["status"] == "approved", raw
        assert ledger(stub_server)["authorizations"]["pgr-during"]["calls"] == 1
        assert_same_answers_one_charge(connector, answers, stub_server, "pgr", 4)
    finally:
        subprocess.run([pg_local, "stop", str(cluster)], capture_output=True)
        shutil.rmtree(cluster, ignore_errors=True)


@pytest.mark.parametrize("fault,found", [("commit-answer-lost", "had committed"),
                                          ("commit-never-sent", "had not committed")])
def test_a_commit_whose_answer_is_lost_is_settled_before_it_is_answered(connector_factory, stub_server, pg_uri,
                                                                        fault, found):
    """A group commit whose answer never comes (its session dropped once the COMMIT succeeded,
    or just before it was sent: IDEMPAY_FAULT_AT) may or may not have committed. The store
    finds out on a new session before answering anything of it: committed, its requests are
    answered as if nothing happened; not committed, the group is tried again. Either way the
    gateway sees only 200s, each payment charged once, the same bytes when asked again, and
    the trail verifies."""
    connector = connector_factory(acquirer=stub_server.url, extra_args=["--store", pg_uri],
                                  env={"IDEMPAY_FAULT_AT": f"{fault}:6"})
    answers = pay_and_settle(connector, f"lost-{fault}", 8)
    log = pathlib.Path(connector.process.log_path).read_text()
    assert "a group commit's answer was lost" in log and f"the group whose answer was lost {found}" in log, log
    assert_same_answers_one_charge(connector, answers, stub_server, f"lost-{fault}", 8)
    assert connector.process.terminate() == 0
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_rocksdb_store_copied_into_postgresql_verifies_and_replays(connector_factory, stub_server, pg_uri):
    """Moving an installation: the stopped connector's RocksDB store copied with `idempay
    copy-store` passes `audit verify` on PostgreSQL, and a connector serving from it gives every
    earlier answer byte for byte without charging again."""
    connector = connector_factory(acquirer=stub_server.url)
    answers = pay_and_settle(connector, "moved", 6)
    rocks = f"rocksdb:{connector.data_dir / 'rocksdb'}"
    busy = subprocess.run([BIN, "copy-store", "--from", rocks, "--to", pg_uri], capture_output=True, timeout=60)
    assert busy.returncode != 0  # the source is still served: refused, nothing copied
    assert connector.process.terminate() == 0

    copied = subprocess.run([BIN, "copy-store", "--from", rocks, "--to", pg_uri], capture_output=True, timeout=120)
    assert copied.returncode == 0, copied.stderr
    assert b"payments: 6 keys" in copied.stdout
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    again = subprocess.run([BIN, "copy-store", "--from", rocks, "--to", pg_uri], capture_output=True, timeout=60)
    assert again.returncode != 0 and b"already holds data" in again.stderr

    on_postgres = connector_factory(acquirer=stub_server.url, extra_args=["--store", pg_uri])
    assert_same_answers_one_charge(on_postgres, answers, stub_server, "moved", 6)


def test_an_async_payment_on_postgresql_is_called_back_once_with_its_final_answer(connector_factory, receiver,
                                                                                   pg_uri):
    """The outbox on PostgreSQL: a pending payment's webhook-driven outcome reaches the gateway
    as one signed callback whose body is what later Create Payments replay (G2, G5)."""
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS + ["--store", pg_uri])
    async_payment(c, r, "pg-async")
    assert r.wait_for(lambda rv: rv.processed), "no callback within 15 s"
    request = r.requests[-1]
    assert callback_body(request)["status"] == "approved"
    assert verify(CALLBACK_SECRET, request["headers"], request["body"])
    again = c.post("/payments", create_body("pg-async", card="4222222222222224", callbackUrl=r.url()))
    assert again[1] == request["body"]
    assert len({req["headers"]["webhook-id"] for req in r.requests}) == 1


def duplicate_arrivals(payment_id, pg_uri):
    inspected = subprocess.run([BIN, "inspect", payment_id, "--json", "--store", pg_uri], capture_output=True,
                               check=True)
    return len([e for e in json.loads(inspected.stdout)["audit"] if e["kind"] == "event_duplicate_reused"])


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (scripts/install-deps.sh)")
def test_a_burst_of_repeats_of_one_payment_leaves_the_service_answering(connector_factory, pg_uri):
    """Thousands of repeats of one payment within seconds (a gateway retrying hard, or a client
    gone wrong): on a shared store each is its own chain entry, and they gather while the
    payment's chained commit is in flight. Recording one must cost the same however many
    gathered with it (it once cost one step per entry already gathered: a burst of a few
    seconds left the service answering nothing for minutes). Right after the burst a new
    payment is answered, and the trail ends up with every arrival, verified."""
    connector = connector_factory(extra_args=["--store", pg_uri])
    root = pathlib.Path(__file__).resolve().parents[2]
    connections = 16
    env = dict(os.environ, IDEMPAY_APP_KEY=APP_KEY, IDEMPAY_APP_TOKEN=APP_TOKEN, LUA_PATH=f"{root}/bench/lua/?.lua;;")
    burst = subprocess.run(["wrk", "-t1", f"-c{connections}", "-d4s", "-s", str(root / "bench/lua/create_replay.lua"),
                            f"http://127.0.0.1:{connector.port}/payments", "--", "pg-burst-1"],
                           env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    answered = int(re.search(r"(\d+) requests in", burst).group(1))
    assert answered > 2_000 and "Non-2xx" not in burst, burst
    started = time.monotonic()
    status, _, _ = connector.post("/payments", create_body("pg-after-burst"))
    assert status == 200
    assert time.monotonic() - started < 5
    deadline = time.monotonic() + 60
    while duplicate_arrivals("pg-burst-1", pg_uri) < answered - connections and time.monotonic() < deadline:
        time.sleep(0.5)
    # All but the first arrivals, which joined the create in flight; at most a request per
    # connection more, received as wrk stopped and not counted by it.
    assert answered - connections <= duplicate_arrivals("pg-burst-1", pg_uri) <= answered + connections
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_repeats_answered_without_the_actor_are_each_in_the_shared_trail(connector_factory, pg_uri):
    """On a shared store every arrival is its own chain entry, those answered by the request
    thread's shortcut too (test_repeats.py): a SIGKILL half a second after the last finds them
    all, chained in order, and verification passes."""
    connector = connector_factory(extra_args=["--store", pg_uri])
    body = create_body("pg-repeats-1")
    status, first, _ = connector.post("/payments", body)
    assert status == 200
    repeats = 100
    assert all(connector.post("/payments", body)[1] == first for _ in range(repeats))
    time.sleep(0.5)
    connector.process.kill()
    inspected = subprocess.run([BIN, "inspect", "pg-repeats-1", "--json", "--store", pg_uri], capture_output=True,
                               check=True)
    trail = json.loads(inspected.stdout)["audit"]
    assert len([e for e in trail if e["kind"] == "event_duplicate_reused"]) == repeats
    assert [e["seq"] for e in trail] == list(range(1, len(trail) + 1))
    verified = subprocess.run([BIN, "audit", "verify", "--store", pg_uri], capture_output=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
