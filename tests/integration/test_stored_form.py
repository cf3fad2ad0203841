"""The stored form across releases: a data directory written by the previous release (stored
format 1, tests/data/format1) is read as it is, migrated by `idempay migrate` or at start, and
then answers every request as that release did, charges nothing again, reconciles what it left
in flight, and verifies — also when the migration was killed halfway."""
import gzip
import json
import pathlib
import shutil
import subprocess
import tarfile
import time

from conftest import APP_KEY, APP_TOKEN, BIN, create_body, ledger
from test_postgres import pg_uri, psql  # noqa: F401 (a fixture)

FORMAT1 = pathlib.Path(__file__).resolve().parent.parent / "data" / "format1"


def format1_store(connector_factory, stub, extra_args=()):
    """A connector's directory holding the previous release's RocksDB store, stopped (with
    `--store URI` in `extra_args`, a data directory of its own: the store is the database's);
    its merchant's acquirer `main` (the one its payments name) is `stub`."""
    acquirers = [{"name": "main", "kind": "http", "url": stub.url}]
    c = connector_factory(acquirer=stub.url, merchants=[{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN,
                                                         "acquirers": acquirers}], extra_args=extra_args)
    c.process.terminate()
    if "--store" not in extra_args:
        shutil.rmtree(c.data_dir)
        with tarfile.open(FORMAT1 / "store.tar.gz") as tar:
            tar.extractall(c.dir)
    return c


def run(*args, env=None):
    import os
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=dict(os.environ, **(env or {})))


def ldb_keys(db, family, prefix=""):
    out = subprocess.run(["ldb", f"--db={db}", f"--column_family={family}", "scan"], capture_output=True, text=True,
                         check=True).stdout
    return [line.split(" : ")[0] for line in out.splitlines() if line.startswith(prefix)]


def stored_format(db):
    out = subprocess.run(["ldb", f"--db={db}", "--column_family=meta", "--value_hex", "get", "format"],
                         capture_output=True, text=True)
    return bytes.fromhex(out.stdout.strip()[2:])[8:].decode() if out.returncode == 0 else None  # after the etag


def assert_answers_as_before(c):
    """Every request the previous release answered, asked again: the same status and bytes."""
    for sent in json.loads((FORMAT1 / "answers.json").read_text()):
        status, raw, _ = c.post(sent["path"], sent["body"])
        assert (status, raw.decode()) == (sent["status"], sent["answer"]), sent["path"] + " " + json.dumps(sent["body"])


def assert_serves_the_old_store(c, stub, where=None):
    c.start()
    assert_answers_as_before(c)
    book = ledger(stub)["authorizations"]
    assert not any(pid.startswith("f1-") and pid != "f1-orphaned" for pid in book), "an old payment charged again"
    # Left orphaned by the previous release (the acquirer was down, its reconciliation gave up):
    # still unresolved, so the gateway's next try charges it, once.
    for _ in range(100):
        status, raw, _ = c.post("/payments", create_body("f1-orphaned"))
        if json.loads(raw)["status"] != "undefined":
            break
        time.sleep(0.1)
    assert status == 200 and json.loads(raw)["status"] == "approved", raw
    assert ledger(stub)["authorizations"]["f1-orphaned"]["charges"] == 1
    # Its chain goes on in the new form.
    status, raw, _ = c.post("/payments/f1-orphaned/settlements", {"paymentId": "f1-orphaned", "requestId": "s-new",
                                                                   "value": 31.9})
    assert status == 200 and json.loads(raw)["value"] == 31.9, raw
    status, raw, _ = c.post("/payments", create_body("f2-new"))
    assert status == 200 and json.loads(raw)["status"] == "approved", raw
    c.process.terminate()
    verified = run("audit", "verify", *(where or ["--data-dir", str(c.data_dir)]))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_store_of_the_previous_release_is_migrated_and_answers_as_it_did(connector_factory, stubs):
    stub = stubs()
    c = format1_store(connector_factory, stub)
    db = c.data_dir / "rocksdb"
    assert stored_format(db) is None and len(ldb_keys(db, "audit", "")) > 0
    heads = [k for k in ldb_keys(db, "audit") if k.endswith("/~head")]
    assert len(heads) == 45
    # The tools read it as it is.
    before = run("audit", "verify", "--data-dir", str(c.data_dir))
    assert before.returncode == 0, before.stdout + before.stderr

    migrated = run("migrate", "--data-dir", str(c.data_dir))
    assert migrated.returncode == 0, migrated.stderr
    assert "the store holds format 2" in migrated.stdout
    assert "migrated from format 1 to 2 (45 keys of the old form removed)" in migrated.stderr
    assert stored_format(db) == "2"
    assert not [k for k in ldb_keys(db, "audit") if k.endswith("/~head")]
    again = run("migrate", "--data-dir", str(c.data_dir))
    assert again.returncode == 0 and "migrated" not in again.stderr and "format 2" in again.stdout
    assert_serves_the_old_store(c, stub)


def test_a_migration_killed_halfway_is_finished_at_the_next_start(connector_factory, stubs):
    stub = stubs()
    c = format1_store(connector_factory, stub)
    db = c.data_dir / "rocksdb"
    killed = run("migrate", "--data-dir", str(c.data_dir), env={"IDEMPAY_CRASH_AT": "during-migration"})
    assert killed.returncode == -9, killed.stderr
    # The heads' copies removed, the format not yet recorded: still read correctly...
    assert stored_format(db) is None
    assert not [k for k in ldb_keys(db, "audit") if k.endswith("/~head")]
    verified = run("audit", "verify", "--data-dir", str(c.data_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # ...refused by a start that may not migrate...
    refused = Process_exit(c, ["--no-migrate"])
    assert "run idempay migrate" in refused
    # ...and finished by one that may.
    assert_serves_the_old_store(c, stub)
    assert stored_format(db) == "2"
    assert "stored form migrated from format 1 to 2 (0 keys" in (c.dir / "connector.log").read_text()


def Process_exit(c, extra):
    """`serve` with `extra` arguments, expected to exit at start: what it said."""
    out = subprocess.run([BIN, *c.args, *extra], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    return out.stdout + out.stderr


def test_a_postgresql_schema_of_the_previous_release_is_migrated_and_answers_as_it_did(connector_factory, stubs,
                                                                                        pg_uri):
    """The same payments, made by the previous release on PostgreSQL and dumped with pg_dump
    (tests/data/format1/postgresql.sql.gz), restored into an empty database."""
    stub = stubs()
    with gzip.open(FORMAT1 / "postgresql.sql.gz", "rt") as dump:
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", pg_uri], input=dump.read(), text=True,
                       check=True, capture_output=True)
    heads = "SELECT count(*) FROM idempay.kv_audit WHERE key LIKE '%/~head'::bytea"
    assert psql(pg_uri, heads).strip() == "45"
    before = run("audit", "verify", "--store", pg_uri)
    assert before.returncode == 0, before.stdout + before.stderr

    migrated = run("migrate", "--store", pg_uri)
    assert migrated.returncode == 0, migrated.stderr
    assert "the schema is up to date" in migrated.stdout and "the store holds format 2" in migrated.stdout
    assert "migrated from format 1 to 2 (45 keys of the old form removed)" in migrated.stderr
    assert psql(pg_uri, heads).strip() == "0"
    # One instance name across its starts: a lease its first start took is its own at the next.
    c = format1_store(connector_factory, stub, extra_args=["--store", pg_uri, "--instance", "format1"])
    assert_serves_the_old_store(c, stub, where=["--store", pg_uri])
