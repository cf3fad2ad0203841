#!/usr/bin/env python3
"""Makes tests/data/format1/store.tar.gz and answers.json: a data directory written by a release of
stored format 1, for test_stored_form.py. Run with that release's binaries:

    IDEMPAY_BIN=/path/to/old/idempay python3 tests/data/format1/make_store.py

With --postgresql URI (an empty database), the same payments go to PostgreSQL instead, and the
schema is dumped to postgresql.sql.gz (pg_dump, plain SQL); the stub's answers are deterministic,
so they must be answers.json's, byte for byte.

Its payments: approved and replayed, settled, settled and partly refunded, cancelled, one
created while the acquirer was down (left orphaned, in the recovery index), and 40 more
approved ones. answers.json holds every request sent and the bytes answered, for the test to
ask again after migrating."""
import gzip
import json
import pathlib
import subprocess
import shutil
import sys
import tarfile
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "integration"))
from conftest import (APP_KEY, APP_TOKEN, SANDBOX, TEST_CALLBACK_HOSTS, Process, create_body,  # noqa: E402
                      free_port, request)


def merchants(acquirer_url):
    """The merchants file: its payments name their acquirer `main` (not its URL), so that a test
    can serve them with an acquirer of its own."""
    return {"merchants": [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN,
                           "acquirers": [{"name": "main", "kind": "http", "url": acquirer_url}]}]}


def main():
    postgresql = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--postgresql" else None
    work = pathlib.Path(tempfile.mkdtemp(prefix="idempay-format1-"))
    stub_port = free_port()
    stub = Process(["acquirer-stub", "--listen", f"127.0.0.1:{stub_port}"], work / "stub.log", program=SANDBOX)
    creds = work / "credentials.json"
    creds.write_text(json.dumps(merchants(f"http://127.0.0.1:{stub_port}")))
    data = work / "data"
    serve = Process(["serve", "--listen", "127.0.0.1:0", "--data-dir", str(data), "--credentials", str(creds),
                     "--reconcile-base-ms", "50",
                     "--reconcile-attempts", "2", "--acquirer-timeout-ms", "300",
                     *(["--store", postgresql] if postgresql else [])], work / "serve.log",
                    env={"IDEMPAY_CALLBACK_ALLOWED_HOSTS": TEST_CALLBACK_HOSTS})
    sent = []

    def post(path, body):
        status, raw, _ = request(serve.port, "POST", path, body)
        sent.append({"path": path, "body": body, "status": status, "answer": raw.decode()})
        assert status == 200, raw

    post("/payments", create_body("f1-approved"))
    post("/payments", create_body("f1-approved"))
    post("/payments", create_body("f1-settled", value=20))
    post("/payments/f1-settled/settlements", {"paymentId": "f1-settled", "requestId": "s-1", "value": 20})
    post("/payments", create_body("f1-refunded", value=30))
    post("/payments/f1-refunded/settlements", {"paymentId": "f1-refunded", "requestId": "s-2", "value": 30})
    post("/payments/f1-refunded/refunds", {"paymentId": "f1-refunded", "requestId": "r-1", "value": 10})
    post("/payments", create_body("f1-cancelled"))
    post("/payments/f1-cancelled/cancellations", {"paymentId": "f1-cancelled", "requestId": "c-1"})
    for i in range(40):
        post("/payments", create_body(f"f1-many-{i}", value=10 + i))
    stub.terminate()
    status, raw, _ = request(serve.port, "POST", "/payments", create_body("f1-orphaned"))
    assert status == 200 and json.loads(raw)["status"] == "undefined", raw
    time.sleep(1.0)  # its reconciliation gives up: orphaned, still in the recovery index
    serve.terminate()
    if postgresql:
        dump = subprocess.run(["pg_dump", "--schema=idempay", "--no-owner", "--no-privileges", postgresql],
                              capture_output=True, text=True, check=True).stdout
        with gzip.open(HERE / "postgresql.sql.gz", "wt") as out:
            out.write(dump)
        assert json.loads((HERE / "answers.json").read_text()) == sent, "answers differ from the RocksDB run's"
        print(f"wrote {HERE / 'postgresql.sql.gz'} ({len(sent)} requests, answered as answers.json)")
    else:
        for log in data.rglob("LOG*"):
            log.unlink()  # RocksDB's own diagnostics: not needed to open the store
        with tarfile.open(HERE / "store.tar.gz", "w:gz") as tar:
            tar.add(data, arcname="data")
        (HERE / "answers.json").write_text(json.dumps(sent, indent=1) + "\n")
        print(f"wrote {HERE / 'store.tar.gz'} and answers.json ({len(sent)} requests)")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
