// A minimal webhook receiver that checks each delivery before trusting it:
// copy it into your service. WEBHOOK_SECRET is the webhook's signing
// secret; PORT the port to listen on (0: any free one). Node 18+, no
// dependencies. (With the official SDK, client.webhooks.constructEvent
// checks the same header; it allows 30 minutes and keeps no replay memory.)
//
// It checks ElevenLabs-Signature ("t=<unix seconds>,v0=<hex HMAC-SHA256 of
// "<t>.<raw body>">"), which signs the attempt's time with the body, so a
// delivery older than the tolerance is refused, and one seen before (a
// captured request sent again) is refused as a replay.
const crypto = require("node:crypto");
const http = require("node:http");

const secret = process.env.WEBHOOK_SECRET || "";
const TOLERANCE_SECS = 5 * 60;
// Signatures accepted within the tolerance, with when: one seen again is a
// replay; older ones are refused by their time, so they are forgotten.
const seen = new Map();

function verify(body, header, nowSecs) {
  const parts = Object.fromEntries((header || "").split(",").map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));
  const t = Number(parts.t);
  if (!/^\d+$/.test(parts.t || "") || !parts.v0) return "missing or malformed signature";
  // Verify the raw bytes received: a re-encoded JSON would differ.
  const want = Buffer.from(crypto.createHmac("sha256", secret).update(`${parts.t}.`).update(body).digest("hex"));
  const got = Buffer.from(parts.v0);
  // timingSafeEqual takes the same time wherever the bytes differ; it
  // needs equal lengths.
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return "bad signature";
  if (Math.abs(nowSecs - t) > TOLERANCE_SECS) return "timestamp outside the tolerance";
  for (const [sig, at] of seen) if (nowSecs - at > 2 * TOLERANCE_SECS) seen.delete(sig);
  if (seen.has(parts.v0)) return "replayed delivery";
  seen.set(parts.v0, nowSecs);
  return null;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const problem = verify(Buffer.concat(chunks), req.headers["elevenlabs-signature"], Math.floor(Date.now() / 1000));
    if (problem) {
      res.writeHead(401).end(problem);
      return;
    }
    // Retries and resends are new deliveries of the same event (new
    // signature): deduplicate on its id before doing the work.
    console.error(`event ${req.headers["x-service-event"]} ${req.headers["x-service-event-id"]}`);
    res.writeHead(200).end(); // answer fast; do slow work afterwards
  });
});

server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`listening on ${address}:${port}`);
});
