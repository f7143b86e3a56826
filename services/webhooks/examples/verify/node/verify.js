// A minimal webhook receiver that checks each delivery's signature: copy
// it into your service. WEBHOOK_SECRET is the webhook's signing secret;
// PORT the port to listen on (0: any free one). Node 18+, no dependencies.
const crypto = require("node:crypto");
const http = require("node:http");

const secret = process.env.WEBHOOK_SECRET || "";

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    // Verify the raw bytes received: a re-encoded JSON would differ.
    const body = Buffer.concat(chunks);
    const want = Buffer.from("sha256=" + crypto.createHmac("sha256", secret).update(body).digest("hex"));
    const got = Buffer.from(req.headers["x-service-signature"] || "");
    // timingSafeEqual takes the same time wherever the bytes differ; it
    // needs equal lengths.
    if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
      res.writeHead(401).end("bad signature");
      return;
    }
    // Deliveries may repeat (retries, resends): deduplicate on this id.
    console.error(`event ${req.headers["x-service-event"]} ${req.headers["x-service-event-id"]}`);
    res.writeHead(200).end(); // answer fast; do slow work afterwards
  });
});

server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`listening on ${address}:${port}`);
});
