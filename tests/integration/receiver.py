"""A local callback receiver with scriptable misbehaviour, and an independent Standard
Webhooks verifier (Python's hmac/base64, not the connector's code path)."""
import base64
import hashlib
import hmac
import http.server
import json
import socket
import threading
import time


def sign(secret, msg_id, timestamp, body):
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret, headers, body, tolerance=300):
    """True if any v1 signature in `webhook-signature` matches and the timestamp is fresh."""
    msg_id, ts = headers.get("webhook-id"), headers.get("webhook-timestamp")
    if not msg_id or not ts or abs(time.time() - int(ts)) > tolerance:
        return False
    expected = sign(secret, msg_id, ts, body)
    return any(hmac.compare_digest(expected, s) for s in headers.get("webhook-signature", "").split())


class Receiver:
    """Records every request; answers each with the next scripted action:
    "ok" (200), a number (that status), "slow" (answers after `slow_seconds`), "drop" (reads the
    body, closes without answering), "redirect" (302 to /elsewhere). Default when the script
    is exhausted: `default`."""

    def __init__(self, script=(), default="ok", slow_seconds=3, tls=None):
        self.script, self.default, self.slow_seconds = list(script), default, slow_seconds
        self.requests, self.processed = [], {}  # processed: webhook-id -> body (receiver dedup)
        self.lock = threading.Lock()
        self.active = self.max_active = 0  # concurrent requests being handled
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                with outer.lock:
                    outer.active += 1
                    outer.max_active = max(outer.max_active, outer.active)
                self.counted = True
                try:
                    self.handle_post()
                finally:
                    self.end_attempt()

            def end_attempt(self):
                # Called before the last byte of an answer (or the close) leaves: once the
                # sender has it, it may start its next delivery on another thread before
                # this one returns, and that must not count as two at once.
                if self.counted:
                    self.counted = False
                    with outer.lock:
                        outer.active -= 1

            def handle_post(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    record = {"path": self.path, "headers": headers, "body": body, "started": time.time()}
                    outer.requests.append(record)
                    action = outer.script.pop(0) if outer.script else outer.default
                if action == "drop":
                    self.end_attempt()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if action == "slow":
                    time.sleep(outer.slow_seconds)
                    action = "ok"
                if action == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_attempt()
                    self.end_headers()
                    return
                status = 200 if action == "ok" else int(action)
                if status == 200:
                    with outer.lock:
                        outer.processed.setdefault(headers.get("webhook-id"), body)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                record["status"] = status
                record["ended"] = time.time()  # answered: the attempt is over for its sender
                self.end_attempt()
                self.wfile.write(b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls:  # (certfile, keyfile)
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/callback", query="accountName=mystore&X-VTEX-signature=s3cr3t", host="127.0.0.1"):
        return f"{self.scheme}://{host}:{self.port}{path}?{query}"

    def wait_for(self, predicate, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if predicate(self):
                    return True
            time.sleep(0.05)
        return False

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def callback_body(request):
    return json.loads(request["body"])
