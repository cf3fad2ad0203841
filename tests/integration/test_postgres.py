"""The connector on PostgreSQL (--store postgresql://...), against a real server started by
scripts/test.sh (scripts/pg-local.sh): answers survive SIGKILL byte for byte with one charge
each, a second serving instance on the same database is refused, the operator commands read
the same store, `audit verify` passes, and no card number is stored."""
import json
import os
import random
import subprocess
import urllib.parse

import pytest

from conftest import BIN, TEST_CARDS, assert_same_answers_one_charge, create_body, pay_and_settle

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

    # One serving instance per database: a second is refused and leaves nothing behind.
    second = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir",
                             str(connector.dir / "second"), "--credentials", str(connector.creds),
                             "--store", pg_uri], capture_output=True, timeout=30)
    assert second.returncode != 0
    assert b"another idempay instance" in second.stderr

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
    assert psql(pg_uri, "SELECT max(version) FROM idempay.schema_version").strip() == "1"
    connector = connector_factory(extra_args=["--store", pg_uri, "--no-migrate"])
    status, raw, _ = connector.post("/payments", create_body("pg-migrated"))
    assert status == 200 and json.loads(raw)["status"] == "approved"
