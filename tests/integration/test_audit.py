"""The audit trail: every arrival accounted for, and any edit or deletion detected (G5)."""
import json
import shutil
import subprocess

from conftest import BIN, concurrently, create_body


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def ldb(db, *args):
    return subprocess.run(["ldb", f"--db={db}", "--column_family=audit", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_inspect_tells_processed_from_reused(connector):
    body = create_body("audited-1", value=50)
    first = connector.post("/payments", body)
    assert connector.post("/payments", body)[1] == first[1]
    assert connector.post("/payments", body)[1] == first[1]
    assert connector.post("/payments/audited-1/settlements", {"requestId": "s-1", "value": 50})[0] == 200
    assert connector.post("/payments/audited-1/refunds", {"requestId": "r-1", "value": 20})[0] == 200
    # Works on the running connector's directory (read-only).
    out = run("inspect", "audited-1", "--json", "--data-dir", str(connector.data_dir))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["state"] == "refunded" and report["settled"] == 50 and report["refunded"] == 20
    kinds = [(a["kind"], a["ref"]) for a in report["audit"]]
    assert kinds[:3] == [("event_received", "audited-1"), ("event_processing_started", "audited-1"),
                         ("event_processed", "audited-1")]
    assert kinds.count(("event_duplicate_reused", "audited-1")) == 2
    assert ("operation_processed", "s-1") in kinds and ("operation_processed", "r-1") in kinds
    processed = [a for a in report["audit"] if a["kind"] == "event_processed"]
    assert processed[0]["before"] == "processing" and processed[0]["after"] == "approved"
    assert {op["requestId"] for op in report["operations"]} == {"s-1", "r-1"}
    assert "4444333322221111" not in out.stdout
    text = run("inspect", "audited-1", "--data-dir", str(connector.data_dir)).stdout
    assert "event_duplicate_reused" in text and "processing -> approved" in text
    assert run("inspect", "nobody", "--data-dir", str(connector.data_dir)).returncode == 3


def test_every_duplicate_of_a_burst_is_in_the_chain(connector):
    # Duplicates arriving together are buffered by the payment's actor and stored in one
    # commit: none may be lost, the chain must stay in order, and a mutation arriving right
    # behind them, and a clean stop right after, must not overtake or drop them.
    body = create_body("burst-1", value=40)
    first = connector.post("/payments", body)
    assert first[0] == 200
    replies = concurrently(48, lambda i: connector.post("/payments", body))
    assert all(r[1] == first[1] for r in replies)
    concurrently(16, lambda i: connector.post("/payments", body) if i else
                 connector.post("/payments/burst-1/settlements", {"requestId": "s-burst", "value": 40}))
    assert connector.process.terminate() == 0
    report = json.loads(run("inspect", "burst-1", "--json", "--data-dir", str(connector.data_dir)).stdout)
    kinds = [a["kind"] for a in report["audit"]]
    counted = sum(c["count"] for c in report["countedArrivals"] if c["kind"] == "event_duplicate_reused")
    assert kinds.count("event_duplicate_reused") + counted == 48 + 15
    assert kinds.count("operation_processed") == 1
    assert [a["seq"] for a in report["audit"]] == list(range(1, len(kinds) + 1))
    verified = run("audit", "verify", "--payment", "burst-1", "--data-dir", str(connector.data_dir))
    assert verified.returncode == 0, verified.stdout


def test_tampering_and_deletion_are_detected(connector, tmp_path):
    for i in range(3):
        connector.post("/payments", create_body(f"chain-{i}"))
        connector.post("/payments", create_body(f"chain-{i}"))
    connector.process.terminate()
    verified = run("audit", "verify", "--data-dir", str(connector.data_dir))
    assert verified.returncode == 0, verified.stdout

    edited = tmp_path / "edited"
    shutil.copytree(connector.data_dir, edited)
    db = edited / "rocksdb"
    raw = bytes.fromhex(ldb(db, "--value_hex", "get", "chain-1/0000000003")[2:])
    assert b'"kind":"event_processed"' in raw
    forged = raw.replace(b'"after":"approved"', b'"after":"denied"')
    ldb(db, "--value_hex", "put", "chain-1/0000000003", "0x" + forged.hex())
    out = run("audit", "verify", "--data-dir", str(edited))
    assert out.returncode != 0 and "chain-1" in out.stdout and "altered" in out.stdout
    assert "chain-0" not in out.stdout and "chain-2" not in out.stdout

    # A create's entries are stored per batch: 1-2 (received, started) under the first's key,
    # 3 (processed) under its own.
    deleted = tmp_path / "deleted"
    shutil.copytree(connector.data_dir, deleted)
    ldb(deleted / "rocksdb", "delete", "chain-2/0000000001")
    out = run("audit", "verify", "--data-dir", str(deleted))
    assert out.returncode != 0 and "chain-2" in out.stdout and "missing" in out.stdout
    out = run("audit", "verify", "--payment", "chain-0", "--data-dir", str(deleted))
    assert out.returncode == 0


def test_a_flood_of_replays_is_counted_not_chained(connector):
    # Ten thousand replays of one payment: every one is accounted for (how many, of which
    # request, first and last), in a bounded number of chain entries.
    import http.client
    import threading
    body = json.dumps(create_body("flood-1", value=12)).encode()
    from conftest import AUTH
    first = connector.post("/payments", json.loads(body))
    assert first[0] == 200
    replays, threads = 10_000, 8
    mismatched = []

    def replay(n):
        conn = http.client.HTTPConnection("127.0.0.1", connector.port, timeout=30)
        for _ in range(n):
            conn.request("POST", "/payments", body=body, headers=AUTH)
            resp = conn.getresponse()
            if resp.read() != first[1]:
                mismatched.append(resp.status)
        conn.close()

    workers = [threading.Thread(target=replay, args=(replays // threads,)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert not mismatched
    assert connector.process.terminate() == 0
    report = json.loads(run("inspect", "flood-1", "--json", "--data-dir", str(connector.data_dir)).stdout)
    individual = [a for a in report["audit"] if a["kind"] == "event_duplicate_reused"]
    counted = [c for c in report["countedArrivals"] if c["kind"] == "event_duplicate_reused"]
    assert len(individual) + sum(c["count"] for c in counted) == replays
    assert len(report["audit"]) <= 64 + replays // 1000 + 8, len(report["audit"])
    assert all(c["sealedIn"] > 0 for c in counted), "a clean stop seals every count"
    assert counted[0]["first"] <= counted[-1]["last"]
    assert "arrivals counted" in run("inspect", "flood-1", "--data-dir", str(connector.data_dir)).stdout
    verified = run("audit", "verify", "--payment", "flood-1", "--data-dir", str(connector.data_dir))
    assert verified.returncode == 0, verified.stdout


def test_stored_text_reaches_an_operators_terminal_escaped(connector, tmp_path):
    """Whatever text a record holds — a reason, an acquirer's message, or bytes written behind
    the connector's back — the command-line tools print no control character: no forged line,
    no ESC sequence, no carriage return or NUL on the operator's terminal."""
    connector.post("/payments", create_body("escape-1"))
    connector.process.terminate()
    edited = tmp_path / "escape"
    shutil.copytree(connector.data_dir, edited)
    db = edited / "rocksdb"
    raw = bytes.fromhex(ldb(db, "--value_hex", "get", "escape-1/0000000001")[2:])
    version, batch = raw[:8], json.loads(raw[8:])  # the store's etag, then the batch's entries
    batch[0]["detail"] = "ok\u001b[31m red\r\n  #99  event_processed  forged\u0000 \u009b2J \u202edesrever"
    ldb(db, "--value_hex", "put", "escape-1/0000000001",
        "0x" + (version + json.dumps(batch, ensure_ascii=False).encode()).hex())
    for args in (("inspect", "escape-1"), ("inspect", "escape-1", "--json"), ("audit", "verify")):
        out = subprocess.run([BIN, *args, "--data-dir", str(edited)], capture_output=True)
        printed = out.stdout + out.stderr
        assert b"\x1b" not in printed and b"\r" not in printed and b"\x00" not in printed, (args, printed)
        assert b"\xc2\x9b" not in printed and b"\xe2\x80\xae" not in printed, "a C1 CSI or a bidirectional override"
        assert b"\n  #99" not in printed, "a forged line of the trail"
    shown = subprocess.run([BIN, "inspect", "escape-1", "--data-dir", str(edited)], capture_output=True).stdout
    assert b"ok\\x1b[31m red\\r\\n  #99" in shown and b"\\u009b2J \\u202edesrever" in shown, shown
    as_json = subprocess.run([BIN, "inspect", "escape-1", "--json", "--data-dir", str(edited)], capture_output=True)
    assert "\u009b2J \u202edesrever" in json.loads(as_json.stdout)["audit"][0]["detail"], "the same text for a reader"
