"""A full disk is an outage, not a crash: on a small tmpfs that fills up, every write is refused
with a retryable 5xx, stored answers are still served, the process stays up and says it is
unhealthy, and once space is back it writes again by itself, without a restart, without a
payment lost or charged twice, and with every audit chain intact."""
import json
import subprocess
import threading
import time

import pytest

from conftest import BIN, Connector, concurrently, create_body, ledger, request


@pytest.fixture
def small_tmpfs(tmp_path):
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(mount_point)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): " + made.stderr.decode().strip())
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def grow(mount_point, size):
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount_point)], check=True)


def wait_for_readiness(c, wanted, timeout=10):
    """Readiness answers from its last write probe (a second old at most, or two seconds in
    flight): polled until it says `wanted`."""
    deadline = time.time() + timeout
    while True:
        status, raw, _ = request(c.port, "GET", "/health/ready", headers={})
        if status == wanted:
            return json.loads(raw)
        assert time.time() < deadline, (status, raw)
        time.sleep(0.2)


def padded(payment_id):
    return create_body(payment_id, orderId="order-" + payment_id + "-" + "x" * 2000)


def fill_until_refused(c, prefix, threads=16, per_thread=300):
    """Creates payments from several connections until writes are refused; returns
    {paymentId: (status, body)} for every create sent."""
    answers, lock, full = {}, threading.Lock(), threading.Event()

    def worker(t):
        for i in range(per_thread):
            if full.is_set() and i % 4:
                continue  # a few more after the first refusal, then stop
            pid = f"{prefix}-{t}-{i}"
            status, raw, _ = c.post("/payments", padded(pid))
            with lock:
                answers[pid] = (status, raw)
            if status != 200:
                full.set()
            if full.is_set() and i > 0 and len([a for a in answers.values() if a[0] != 200]) > 3 * threads:
                return

    concurrently(threads, worker)
    return answers


def test_full_disk_is_an_outage_not_a_crash(base_dir, small_tmpfs, stub_server):
    c = Connector(base_dir, "full-disk", acquirer=stub_server.url)
    c.process.terminate()  # moved onto the small file system
    c.data_dir = small_tmpfs / "data"
    c.args[c.args.index("--data-dir") + 1] = str(c.data_dir)
    c.start()
    try:
        answers = fill_until_refused(c, "full")
        refused = {pid: a for pid, a in answers.items() if a[0] != 200}
        accepted = {pid: a for pid, a in answers.items() if a[0] == 200}
        assert refused, "the disk never filled up"
        assert accepted, "nothing was written before the disk filled up"
        for pid, (status, raw) in refused.items():
            body = json.loads(raw)
            assert status in (500, 503) and body["status"] == "error", (pid, status, raw)
        assert c.process.proc.poll() is None, "the connector died on a full disk"
        log = c.process.log_path.read_bytes()
        assert b"storage unhealthy" in log
        # The operator learns how much room writes need to resume: RocksDB's reserve.
        assert b"writes resume by themselves once 16 MB are free" in log
        # Stored answers are still served, byte for byte, while nothing can be written.
        for pid, (status, raw) in list(accepted.items())[:20]:
            again, replayed, _ = c.post("/payments", padded(pid))
            assert (again, replayed) == (200, raw), pid
        assert c.post("/payments", padded("full-late"))[0] in (500, 503)
        # Not ready while nothing can be written (the load balancer sends elsewhere); alive.
        assert wait_for_readiness(c, 503)["code"] == "store-not-writable"
        assert request(c.port, "GET", "/health/live", headers={})[0] == 200

        grow(small_tmpfs, "64m")  # space is back; no restart
        deadline = time.time() + 60
        while c.post("/payments", padded("full-after"))[0] != 200:
            assert time.time() < deadline, "writes did not resume once space was back"
            time.sleep(0.5)
        assert b"storage healthy again" in c.process.log_path.read_bytes()
        assert wait_for_readiness(c, 200)["status"] == "ready"
        # The gateway retries what was refused: each payment is charged exactly once.
        for pid in list(refused) + ["full-late"]:
            status, raw, _ = c.post("/payments", padded(pid))
            assert status == 200 and json.loads(raw)["status"] == "approved", (pid, raw)
        book = ledger(stub_server)["authorizations"]
        for pid in list(answers) + ["full-late", "full-after"]:
            assert book[pid]["charges"] == 1 and book[pid]["calls"] >= 1, pid
        verify = subprocess.run([BIN, "audit", "verify", "--data-dir", str(c.data_dir)], capture_output=True)
        assert verify.returncode == 0, verify.stdout.decode()[-2000:]
    finally:
        code = c.process.terminate()
    assert code == 0


def test_a_full_disk_lets_no_operator_action_through_unguarded(base_dir, small_tmpfs, stub_server):
    """The operator API's Idempotency-Key records live in the same store: with the disk full, a
    keyed manual refund is a 503 and reaches no acquirer; once space is back, the retry with the
    same key refunds once."""
    from test_operator_api import MERCHANTS, OPERATORS, ROOT
    c = Connector(base_dir, "full-disk-operator", acquirer=stub_server.url, merchants=MERCHANTS,
                  operators=OPERATORS)
    c.process.terminate()
    c.data_dir = small_tmpfs / "data"
    c.args[c.args.index("--data-dir") + 1] = str(c.data_dir)
    c.start()
    operator = {"Authorization": "Bearer " + ROOT, "Content-Type": "application/json", "Idempotency-Key": "full-1"}
    try:
        assert c.post("/payments", create_body("op-full", value=10))[0] == 200
        settle = dict(operator, **{"Idempotency-Key": "full-s"})
        assert request(c.port, "POST", "/admin/v1/payments/op-full/settlements", {"value": 10, "reason": "r"},
                       settle)[0] == 200
        fill_until_refused(c, "op-fill")
        body = {"value": 2, "reason": "disk full"}
        status, raw, headers = request(c.port, "POST", "/admin/v1/payments/op-full/refunds", body, operator)
        assert status == 503 and headers.get("retry-after"), raw
        assert not [k for k in ledger(stub_server).get("refunds", {}) if k.startswith("op-full/")]
        grow(small_tmpfs, "64m")
        deadline = time.time() + 20
        while (answer := request(c.port, "POST", "/admin/v1/payments/op-full/refunds", body, operator))[0] != 200:
            assert answer[0] in (409, 503) and time.time() < deadline, answer
            time.sleep(0.3)
        refunds = [r for k, r in ledger(stub_server).get("refunds", {}).items() if k.startswith("op-full/")]
        assert len(refunds) == 1 and refunds[0]["amount"] == 2, refunds
    finally:
        c.process.terminate()


def test_a_smaller_memtable_recovers_with_less_space_freed(base_dir, small_tmpfs, stub_server):
    """RocksDB resumes after a full disk only once the largest memtable fits in the free space:
    with --rocksdb-memtable-mb 1, freeing 4 MB is enough (16 MB would be needed by default)."""
    c = Connector(base_dir, "full-disk-small-memtable", acquirer=stub_server.url,
                  extra_args=["--rocksdb-memtable-mb", "1"])
    c.process.terminate()
    c.data_dir = small_tmpfs / "data"
    c.args[c.args.index("--data-dir") + 1] = str(c.data_dir)
    c.start()
    try:
        refused = {pid for pid, (status, _) in fill_until_refused(c, "small").items() if status != 200}
        assert refused, "the disk never filled up"
        assert b"writes resume by themselves once 1 MB are free" in c.process.log_path.read_bytes()
        grow(small_tmpfs, "12m")
        deadline = time.time() + 30
        while c.post("/payments", padded("small-after"))[0] != 200:
            assert time.time() < deadline, "writes did not resume with 4 MB freed"
            time.sleep(0.5)
        for pid in refused:
            status, raw, _ = c.post("/payments", padded(pid))
            assert status == 200 and json.loads(raw)["status"] == "approved", (pid, raw)
        book = ledger(stub_server)["authorizations"]
        assert all(book[pid]["charges"] == 1 for pid in refused)
    finally:
        assert c.process.terminate() == 0
