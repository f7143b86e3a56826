// Workspace webhooks through the official SDK (client.webhooks: create,
// list, update, delete), and real deliveries from the stack verified the
// ways a receiver verifies them: the SDK's webhooks.constructEvent
// (ElevenLabs-Signature), the standardwebhooks library from npm (the
// Standard Webhooks headers) and the spec's X-Service-Signature. The stack
// must let webhooks reach 127.0.0.1 (VOICEAI_OUTBOUND_ALLOW_HOSTS), where
// this file's receiver listens.
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import { after, before, describe, it } from "node:test";

import { Webhook } from "standardwebhooks";

import { TEST_TIMEOUT_MS, adminClient, assertNonEmptyString, expectStatus, settings, uniqueName } from "./helpers.mjs";

/** A local receiver keeping each delivery's raw body and headers. */
function startReceiver() {
  const deliveries = [];
  const waiters = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, rawBody: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        deliveries,
        close: () => new Promise((r) => server.close(r)),
        /** The first delivery pred selects, waiting for it up to ms. */
        async waitFor(pred, what, ms = 20_000) {
          const deadline = Date.now() + ms;
          for (;;) {
            const found = deliveries.find(pred);
            if (found) return found;
            const left = deadline - Date.now();
            if (left <= 0) assert.fail(`no ${what} within ${ms} ms; got ${deliveries.length} deliveries`);
            await new Promise((r) => {
              const timer = setTimeout(r, left);
              waiters.push(() => {
                clearTimeout(timer);
                r();
              });
            });
          }
        },
      });
    });
  });
}

/** The spec's X-Service-Signature check, as services/webhooks/examples do it. */
function serviceSignatureValid(secret, rawBody, header) {
  const want = Buffer.from("sha256=" + createHmac("sha256", secret).update(rawBody).digest("hex"));
  const got = Buffer.from(header ?? "");
  return got.length === want.length && timingSafeEqual(got, want);
}

/** An ElevenLabs-Signature header for body at unix seconds t, as the platform makes one. */
function elevenLabsHeader(secret, rawBody, t) {
  return `t=${t},v0=` + createHmac("sha256", secret).update(`${t}.${rawBody}`).digest("hex");
}

/** Verifies d every way; returns the event the SDK parsed. */
async function verifyEveryWay(client, d, secret) {
  const event = await client.webhooks.constructEvent(d.rawBody, d.headers["elevenlabs-signature"], secret);
  new Webhook(secret).verify(d.rawBody, d.headers);
  assert.ok(serviceSignatureValid(secret, d.rawBody, d.headers["x-service-signature"]), "X-Service-Signature");
  assert.equal(d.headers["webhook-id"], d.headers["x-service-event-id"]);
  assert.equal(d.headers["webhook-timestamp"], d.headers["x-service-timestamp"]);
  return event;
}

describe("workspace webhooks", () => {
  const client = adminClient({ maxRetries: 0 });
  let rcv;
  let webhookId;
  let secret;
  const name = uniqueName("qa-hook");

  before(async () => {
    rcv = await startReceiver();
  });
  after(async () => {
    await rcv?.close();
  });

  it("create answers an id and a generated secret; list parses it", { timeout: TEST_TIMEOUT_MS }, async () => {
    const created = await client.webhooks.create({
      settings: { authType: "hmac", name, webhookUrl: rcv.url, requestHeaders: { "X-Team": "qa" } },
    });
    assertNonEmptyString(created.webhookId, "webhookId");
    assertNonEmptyString(created.webhookSecret, "webhookSecret");
    webhookId = created.webhookId;
    secret = created.webhookSecret;
    const { webhooks } = await client.webhooks.list({ includeUsages: true });
    const mine = webhooks.find((w) => w.webhookId === webhookId);
    assert.ok(mine, "the new webhook is listed");
    assert.equal(mine.name, name);
    assert.equal(mine.webhookUrl, rcv.url);
    assert.equal(mine.authType, "hmac");
    assert.equal(mine.isDisabled, false);
    assert.equal(mine.isAutoDisabled, false);
    assert.deepEqual(mine.events, ["agent_qa"]);
    assert.equal(mine.mostRecentFailureErrorCode, undefined);
    assert.equal(typeof mine.createdAtUnix, "number");
    assert.ok(!JSON.stringify(webhooks).includes(secret), "the secret is shown once");
  });

  it("a ticket's delivery verifies with constructEvent, standardwebhooks and X-Service-Signature", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId } = await client.conversationalAi.agents.create({ name: uniqueName("hooks"), conversationConfig: {} });
    const ticket = await client.conversationalAi.triageTickets.createManual(agentId, { qaComment: "Delivered to the webhook" });
    const d = await rcv.waitFor(
      (x) => x.headers["x-service-event"] === "ticket_created" && x.rawBody.includes(ticket.agentqaTicketId),
      "ticket_created delivery",
    );
    assert.equal(d.headers["x-team"], "qa", "the webhook's request header");
    assert.equal(d.headers["content-type"], "application/json");
    const event = await verifyEveryWay(client, d, secret);
    assert.equal(event.event, "ticket_created");
    assert.equal(event.data.ticket.agentqa_ticket_id, ticket.agentqaTicketId);
    // The attempt's own time.
    const t = Number(/t=(\d+)/.exec(d.headers["elevenlabs-signature"])[1]);
    assert.ok(Math.abs(Date.now() / 1000 - t) < 120, `t=${t} is the attempt's time`);

    // A changed byte is refused by every verifier.
    const tampered = d.rawBody.replace("Delivered", "delivered");
    assert.notEqual(tampered, d.rawBody);
    await assert.rejects(client.webhooks.constructEvent(tampered, d.headers["elevenlabs-signature"], secret), /Signature hash does not match/);
    assert.throws(() => new Webhook(secret).verify(tampered, d.headers));
    assert.equal(serviceSignatureValid(secret, tampered, d.headers["x-service-signature"]), false);
    // A delivery signed more than 30 minutes ago (a replay) is refused for
    // its time, though its signature is right; so does the Standard
    // Webhooks library (5 minutes).
    const old = Math.floor(Date.now() / 1000) - 31 * 60;
    await assert.rejects(client.webhooks.constructEvent(d.rawBody, elevenLabsHeader(secret, d.rawBody, old), secret), /Timestamp outside the tolerance zone/);
    const wh = new Webhook(secret);
    const oldHeaders = { ...d.headers, "webhook-timestamp": String(old), "webhook-signature": wh.sign(d.headers["webhook-id"], new Date(old * 1000), d.rawBody) };
    assert.throws(() => wh.verify(d.rawBody, oldHeaders), /timestamp too old/i);
    // The wrong secret verifies nothing.
    await assert.rejects(client.webhooks.constructEvent(d.rawBody, d.headers["elevenlabs-signature"], "whsec_" + Buffer.from("another secret!!").toString("base64")));
  });

  it("a test delivery and every delivery received verify", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { baseUrl, apiKey } = settings();
    const res = await fetch(`${baseUrl}/v1/voiceai/webhooks/${webhookId}/test`, {
      method: "POST",
      headers: { "xi-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ event_type: "ticket_updated" }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { event_id: eventId, status } = await res.json();
    assert.equal(status, "success");
    const d = await rcv.waitFor((x) => x.headers["x-service-event-id"] === eventId, "test delivery");
    assert.equal((await verifyEveryWay(client, d, secret)).event, "ticket_updated");
    for (const x of rcv.deliveries) await verifyEveryWay(client, x, secret);
  });

  it("update and delete answer ok, and list shows the change", { timeout: TEST_TIMEOUT_MS }, async () => {
    const updated = await client.webhooks.update(webhookId, {
      isDisabled: true,
      name: `${name}-paused`,
      retryEnabled: false,
      requestHeaders: { "X-Team": "qa-2" },
      events: ["agent_qa"],
    });
    assert.equal(updated.status, "ok");
    let mine = (await client.webhooks.list()).webhooks.find((w) => w.webhookId === webhookId);
    assert.equal(mine.isDisabled, true);
    assert.equal(mine.isAutoDisabled, false);
    assert.equal(mine.name, `${name}-paused`);
    await client.webhooks.update(webhookId, { isDisabled: false, name });
    mine = (await client.webhooks.list()).webhooks.find((w) => w.webhookId === webhookId);
    assert.equal(mine.isDisabled, false);
    // A header the platform sets cannot be given.
    await expectStatus(client.webhooks.update(webhookId, { isDisabled: false, name, requestHeaders: { "Content-Type": "text/plain" } }), 422);
    const deleted = await client.webhooks.delete(webhookId);
    assert.equal(deleted.status, "ok");
    assert.equal((await client.webhooks.list()).webhooks.find((w) => w.webhookId === webhookId), undefined);
    await expectStatus(client.webhooks.delete(webhookId), 404);
  });
});
