"""A minimal webhook receiver that checks each delivery's signature: copy it
into your service. WEBHOOK_SECRET is the webhook's signing secret; PORT the
port to listen on (0: any free one). Python 3.8+, standard library only."""
import hashlib
import hmac
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ.get("WEBHOOK_SECRET", "").encode()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        # Verify the raw bytes received: a re-encoded JSON would differ.
        body = self.rfile.read(min(int(self.headers.get("Content-Length", 0)), 1 << 20))
        want = b"sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest().encode()
        got = self.headers.get("X-Service-Signature", "").encode("utf-8", "replace")
        # compare_digest takes the same time wherever the bytes differ.
        if not hmac.compare_digest(want, got):
            self.send_response(401)
            self.end_headers()
            return
        # Deliveries may repeat (retries, resends): deduplicate on this id.
        print("event", self.headers.get("X-Service-Event"), self.headers.get("X-Service-Event-Id"), file=sys.stderr)
        self.send_response(200)  # answer fast; do slow work afterwards
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Receiver)
print("listening on %s:%d" % server.server_address, flush=True)
server.serve_forever()
