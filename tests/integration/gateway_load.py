"""The gateway's side of the failover tests and the soak: threads that each take payments through
Create Payment (two overlapping copies, to different instances), a settlement and a partial
refund, sending every request to a live instance at random (a load balancer without affinity)
and retrying it as the gateway does (a 503, or a payment still undefined) until it is answered
200 with a final status. What they were told is kept, so
that afterwards the answers, the acquirer's ledger and the unavailability around each fault can
be checked against it."""
import concurrent.futures
import http.client
import json
import random
import threading
import time

from conftest import AUTH, create_body

REQUEST_TIMEOUT = 30  # seconds: the gateway's; a request not answered within it is a failure


class GatewayLoad:
    def __init__(self, instances, workers=4, tag="ha", retry_pause=0.25):
        self.instances = list(instances)  # objects with a .port, one per live idempay instance
        self.workers, self.tag, self.retry_pause = workers, tag, retry_pause
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.successes = []      # (sent, answered) of each request's first 200: a commit
        self.finals = {}         # (path, paymentId) -> the body answered 200, bytes
        self.bodies = {}         # (path, paymentId) -> the request's body
        self.retries = []        # how many 503s (or lost connections) each request took before its 200
        self.statuses = {}       # status (or an exception's name) -> count
        self.failures = []       # anything the gateway could not retry into a success
        self.threads = []

    # -- running ----------------------------------------------------------------------------------

    def start(self):
        for w in range(self.workers):
            t = threading.Thread(target=self._worker, args=(w,), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=2 * REQUEST_TIMEOUT + 10)
        assert not any(t.is_alive() for t in self.threads), "a gateway thread never finished"

    def set_instances(self, instances):
        with self.lock:
            self.instances = list(instances)

    def _worker(self, w):
        i = 0
        while not self.stopping.is_set():
            pid = f"{self.tag}-{w}-{i}"
            i += 1
            create = create_body(pid, value=10)
            copies = [threading.Thread(target=self._until_answered, args=("/payments", pid, create))
                      for _ in range(2)]
            for c in copies:
                c.start()
            for c in copies:
                c.join()
            for path, body in ((f"/payments/{pid}/settlements", {"paymentId": pid, "requestId": f"s-{pid}",
                                                                  "value": 10}),
                               (f"/payments/{pid}/refunds", {"paymentId": pid, "requestId": f"r-{pid}",
                                                             "value": 4})):
                if not self._until_answered(path, pid, body):
                    break

    def _until_answered(self, path, pid, body):
        """Sends until 200 (True) or a failure; the stop waits for a request already begun."""
        tries = 0
        while True:
            with self.lock:
                port = random.choice(self.instances).port
            sent = time.monotonic()
            try:
                status, raw, headers = self._post(port, path, body)
            except (OSError, http.client.HTTPException) as e:
                # Refused or reset: the instance died (a test's SIGKILL); the gateway tries again.
                # Not answered within its timeout: a failure.
                self._count(type(e).__name__)
                if isinstance(e, TimeoutError) or "timed out" in str(e):
                    return self._fail(path, pid, f"no answer within {REQUEST_TIMEOUT} s")
                tries += 1
                time.sleep(self.retry_pause)
                continue
            answered = time.monotonic()
            self._count(status)
            if status == 200 and b'"status":"undefined"' in raw:
                # Not decided yet (another instance has the payment in hand past this one's
                # follow timeout): the gateway asks again later, as for a 503.
                tries += 1
                time.sleep(self.retry_pause)
                continue
            if status == 200:
                return self._succeeded(path, pid, body, raw, sent, answered, tries)
            if status == 503 and headers.get("retry-after"):
                tries += 1
                time.sleep(self.retry_pause)
                continue
            return self._fail(path, pid, f"{status} {headers.get('retry-after')!r} {raw[:200]!r}")

    @staticmethod
    def _post(port, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=AUTH)
            resp = conn.getresponse()
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()

    def _count(self, key):
        with self.lock:
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def _succeeded(self, path, pid, body, raw, sent, answered, tries):
        with self.lock:
            if (path, pid) not in self.finals:  # the first 200 of a request: a commit (a copy's may be a replay)
                self.successes.append((sent, answered))
            self.retries.append(tries)
            first = self.finals.setdefault((path, pid), raw)
            self.bodies[(path, pid)] = body
            if first != raw:
                self.failures.append(f"{path} {pid}: two answers: {first!r} and {raw!r}")
        return True

    def _fail(self, path, pid, what):
        with self.lock:
            self.failures.append(f"{path} {pid}: {what}")
        return False

    # -- what it saw ------------------------------------------------------------------------------

    def unavailability(self, fault_at, until):
        """The longest time without a successful commit between `fault_at` and `until`
        (time.monotonic()): the fault's cost as the gateway saw it. Commits that were under way
        may still complete just after a fault; the gap that follows is the outage."""
        with self.lock:
            done = sorted(a for _, a in self.successes if fault_at <= a <= until)
        return max((b - a for a, b in zip([fault_at, *done], [*done, until])), default=until - fault_at)

    def wait_for_commit_sent_after(self, moment, timeout=60):
        """Until a request sent after `moment` has been answered 200 (the first commit then)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if any(sent > moment for sent, _ in self.successes):
                    return
            time.sleep(0.2)
        raise AssertionError(f"no successful commit within {timeout} s: {self.summary()}")

    def summary(self):
        with self.lock:
            retried = [r for r in self.retries if r]
            return {"answered 200": len(self.successes), "statuses": dict(self.statuses),
                    "requests retried": len(retried), "most retries of one request": max(self.retries, default=0),
                    "failures": len(self.failures)}


def check_after(load, instances, ledger_of, audit_verify):
    """What must hold once the load has stopped: every request answered 200 answers the same
    bytes on every instance; the acquirer charged each payment once, captured and refunded
    each once, for what was asked and nothing else; the audit trail verifies. Returns how many
    acquirer calls were repeated with the same idempotency key (retries it absorbed)."""
    assert not load.failures, f"{len(load.failures)} failures, e.g. {load.failures[:5]}"

    def asked_again(item):
        (path, pid), raw = item
        for instance in instances:
            status, again, _ = instance.post(path, load.bodies[(path, pid)])
            assert (status, again) == (200, raw), f"{path} {pid} on :{instance.port}: {status} {again!r} != {raw!r}"

    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # as a gateway would: several at once
        list(pool.map(asked_again, sorted(load.finals.items())))
    book = ledger_of()
    created = {pid for (path, pid) in load.finals if path == "/payments"}
    charged = {pid for pid, e in book["authorizations"].items() if e["charges"]}
    assert charged == created, f"charged but not answered: {sorted(charged - created)[:5]}, " \
                               f"answered but not charged: {sorted(created - charged)[:5]}"
    assert all(e["charges"] <= 1 for e in book["authorizations"].values())
    for kind, prefix, amount in (("captures", "s", "10.00"), ("refunds", "r", "4.00")):
        for key, e in book[kind].items():
            pid, request = key.split("/", 1)
            assert request == f"{prefix}-{pid}", f"{kind}: {key} was never asked"
            assert e["succeeded"] and e["amount"] == float(amount), (key, e)
        path = "settlements" if kind == "captures" else "refunds"
        for (p, pid) in load.finals:
            if p.endswith("/" + path):
                assert f"{pid}/{prefix}-{pid}" in book[kind], f"{p} answered 200 but not in the ledger"
    repeated = sum(e["calls"] - 1 for kind in ("authorizations", "captures", "refunds") for e in book[kind].values())
    verified = audit_verify()
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return repeated

