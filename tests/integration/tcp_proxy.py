"""A TCP proxy a test can cut, for partitions that drop packets instead of closing sockets."""
import socket
import threading


class CuttableProxy:
    """A TCP proxy that can stop forwarding: its connections stay open and silent (a partition
    that drops packets), and new ones are accepted and left silent too. Clearing `answers`
    alone lets requests through and holds the answers: a call that reaches its destination,
    whose answer is lost."""

    def __init__(self, target_port):
        self.target_port, self.forwarding, self.answers = target_port, threading.Event(), threading.Event()
        self.forwarding.set()
        self.answers.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            for a, b, gates in ((client, server, [self.forwarding]), (server, client, [self.forwarding, self.answers])):
                threading.Thread(target=self._pump, args=(a, b, gates), daemon=True).start()

    def _pump(self, src, dst, gates):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                for gate in gates:
                    gate.wait()  # cut: the bytes go nowhere, the sockets stay open
                if self.closed:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.forwarding.set()
        self.answers.set()
        self.listener.close()
