"""A stand-in for the gateway's Secure Proxy, on loopback: it takes the provider's POST with
`X-PROVIDER-Forward-To`, checks the destination against its allowlist (403), replaces the card
tokens it issued with the card data (400 for a token it does not know), strips the
`X-PROVIDER-Forward-` prefix from the provider's other headers, forwards, and relays the
acquirer's answer — as docs/ppp-surface.md#secure-proxy describes the real one.

`mode` scripts failures: "forward" (the default), "403" / "500" (answered without
forwarding), "forward-then-500" (the acquirer acts, the answer is lost), "hang" (no answer for
`hang_seconds`, nothing forwarded)."""
import http.client
import http.server
import re
import threading
import time
import urllib.parse

TOKEN = re.compile(rb"#vtex#token#[A-Za-z0-9]+#[a-z]+#")
FORWARD = "x-provider-forward-"


class FakeSecureProxy:
    def __init__(self, allowed_prefixes, hang_seconds=3):
        self.allowed, self.hang_seconds = list(allowed_prefixes), hang_seconds
        self.mode = "forward"
        self.vault = {}  # token -> card datum, as the gateway holds them
        self.received = []  # what the provider sent: {"headers", "body"}
        self.forwarded = []  # what reached the acquirer: {"url", "headers"} (bodies hold card data)
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with outer.lock:
                    outer.received.append({"headers": headers, "body": body})
                    mode = outer.mode
                status, answer = outer.handle(mode, headers, body)
                if status is None:
                    return  # hung up
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/proxy"):
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def tokenize(self, card):
        """The tokens the gateway would put in a Create Payment for `card` (a dict with number,
        holder, csc): the card dict of the body, in Secure Proxy form."""
        out = {"bin": card["number"][:6], "numberLength": len(card["number"]), "cscLength": len(card["csc"]),
               "expiration": {"month": "12", "year": "2030"}}
        for field in ("number", "holder", "csc"):
            token = f"#vtex#token#{len(self.vault):06d}{field[:1]}#{field}#"
            self.vault[token.encode()] = card[field].encode()
            out[field + "Token"] = token
        return out

    def handle(self, mode, headers, body):
        if mode == "hang":
            time.sleep(self.hang_seconds)
            return None, b""
        if mode in ("403", "500"):
            return int(mode), b'{"error":"proxy says no"}'
        destination = headers.get(FORWARD + "to", "")
        if not destination:
            return 400, b'{"error":"X-PROVIDER-Forward-To is required"}'
        if not any(destination.startswith(p) for p in self.allowed):
            return 403, b'{"error":"destination not allowed"}'
        unknown = [t for t in TOKEN.findall(body) if t not in self.vault]
        if unknown:
            return 400, b'{"error":"unrecognised token"}'
        resolved = TOKEN.sub(lambda m: self.vault[m.group(0)], body)
        forward_headers = {k[len(FORWARD):]: v for k, v in headers.items() if k.startswith(FORWARD) and k != FORWARD + "to"}
        forward_headers["content-type"] = headers.get("content-type", "application/json")
        target = urllib.parse.urlsplit(destination)
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
        conn.request("POST", target.path, body=resolved, headers=forward_headers)
        resp = conn.getresponse()
        answer = resp.read()
        conn.close()
        with self.lock:
            self.forwarded.append({"url": destination, "headers": forward_headers})
        if mode == "forward-then-500":
            return 500, b'{"error":"gateway failure after forwarding"}'
        return resp.status, answer

    def close(self):
        self.server.shutdown()
        self.server.server_close()
