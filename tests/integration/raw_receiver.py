"""A callback receiver on a raw socket: it keeps every byte each connection sent, so that a
test can count request lines and headers exactly as they crossed the wire, with nothing
parsed away by an HTTP library."""
import re
import socket
import threading
import time

REQUEST_LINE = re.compile(rb"^[A-Z]+ \S+ HTTP/1\.[01]\r?$", re.M)


class RawReceiver:
    def __init__(self, port=0):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.streams, self.lock, self.closed = [], threading.Lock(), False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        """Reads until the peer is quiet for half a second (a smuggled second request would
        have been written with the first), answers 200 once, and closes."""
        raw = b""
        conn.settimeout(0.5)
        while True:
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            raw += chunk
        with self.lock:
            self.streams.append(raw)
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        except OSError:
            pass
        conn.close()

    def raw(self):
        with self.lock:
            return b"".join(self.streams)

    def request_lines(self):
        return REQUEST_LINE.findall(self.raw())

    def wait_for_requests(self, n, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.request_lines()) >= n:
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close alone does not
        except OSError:
            pass
        self.sock.close()
