"""A minimal webhook receiver that checks each delivery before trusting it:
copy it into your service. WEBHOOK_SECRET is the webhook's signing secret;
PORT the port to listen on (0: any free one). Python 3.8+, standard library
only.

It checks ElevenLabs-Signature ("t=<unix seconds>,v0=<hex HMAC-SHA256 of
"<t>.<raw body>">"), which signs the attempt's time with the body, so a
delivery older than the tolerance is refused, and one seen before (a
captured request sent again) is refused as a replay."""
import hashlib
import hmac
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ.get("WEBHOOK_SECRET", "").encode()
TOLERANCE_SECS = 5 * 60
# Signatures accepted within the tolerance, with when: one seen again is a
# replay; older ones are refused by their time, so they are forgotten.
SEEN = {}
SEEN_LOCK = threading.Lock()


def verify(body, header, now):
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    ts, sig = parts.get("t", ""), parts.get("v0", "")
    if not ts.isdigit() or not sig:
        return "missing or malformed signature"
    # Verify the raw bytes received: a re-encoded JSON would differ.
    want = hmac.new(SECRET, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    # compare_digest takes the same time wherever the strings differ.
    if not hmac.compare_digest(want.encode(), sig.encode("utf-8", "replace")):
        return "bad signature"
    if abs(now - int(ts)) > TOLERANCE_SECS:
        return "timestamp outside the tolerance"
    with SEEN_LOCK:
        for old in [s for s, at in SEEN.items() if now - at > 2 * TOLERANCE_SECS]:
            del SEEN[old]
        if sig in SEEN:
            return "replayed delivery"
        SEEN[sig] = now
    return None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(min(int(self.headers.get("Content-Length", 0)), 1 << 20))
        problem = verify(body, self.headers.get("ElevenLabs-Signature", ""), int(time.time()))
        if problem:
            self.send_response(401)
            self.end_headers()
            self.wfile.write(problem.encode())
            return
        # Retries and resends are new deliveries of the same event (new
        # signature): deduplicate on its id before doing the work.
        print("event", self.headers.get("X-Service-Event"), self.headers.get("X-Service-Event-Id"), file=sys.stderr)
        self.send_response(200)  # answer fast; do slow work afterwards
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Receiver)
print("listening on %s:%d" % server.server_address, flush=True)
server.serve_forever()
