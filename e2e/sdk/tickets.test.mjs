// Triage tickets through the official SDK: every conversationalAi.triageTickets
// method parses our responses. Creating a ticket on a conversation needs a
// conversation the platform has seen: the Go harness publishes one and passes
// VOICEAI_E2E_AGENT_ID and VOICEAI_E2E_CONVERSATION_ID (the SDK strips any
// body field it does not know, so agent_id cannot be sent through it).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { TEST_TIMEOUT_MS, adminClient, assertNonEmptyString, expectStatus, uniqueName } from "./helpers.mjs";

const agentFromEnv = process.env.VOICEAI_E2E_AGENT_ID?.trim();
const conversationId = process.env.VOICEAI_E2E_CONVERSATION_ID?.trim();

function assertTicket(t, what) {
  assertNonEmptyString(t.agentqaTicketId, `${what}.agentqaTicketId`);
  assertNonEmptyString(t.workspaceId, `${what}.workspaceId`);
  assert.ok(Array.isArray(t.conversationIds), `${what}.conversationIds`);
  assert.ok(Array.isArray(t.ticketComments) && Array.isArray(t.turnComments), `${what} comments`);
  assert.ok(Array.isArray(t.statusChanges) && Array.isArray(t.priorityChanges), `${what} history`);
  assert.ok(["open", "in_progress", "resolved", "cancelled", "merged"].includes(t.status), `${what}.status = ${t.status}`);
}

describe("triage tickets", () => {
  const client = adminClient({ maxRetries: 0 });
  let agentId = agentFromEnv;
  let manualId;
  let conversationTicketId;

  it("createManual and get parse", { timeout: TEST_TIMEOUT_MS }, async () => {
    if (!agentId) {
      const { agentId: id } = await client.conversationalAi.agents.create({ name: uniqueName("tickets"), conversationConfig: {} });
      agentId = id;
    }
    const created = await client.conversationalAi.triageTickets.createManual(agentId, {
      qaComment: "Follow up on refunds",
      priority: "high",
    });
    assertTicket(created, "createManual");
    assert.equal(created.source, "manual");
    assert.equal(created.priority, "high");
    manualId = created.agentqaTicketId;
    const got = await client.conversationalAi.triageTickets.get(manualId);
    assert.equal(got.agentqaTicketId, manualId);
    assert.equal(got.title, "Follow up on refunds");
  });

  it("create on a conversation, addComment, addTurnComment, update parse", { timeout: TEST_TIMEOUT_MS }, async (t) => {
    if (!conversationId) {
      t.skip("VOICEAI_E2E_CONVERSATION_ID not set: no conversation known to the platform");
      return;
    }
    const created = await client.conversationalAi.triageTickets.create({
      conversationId,
      qaComment: "The agent quoted a wrong price",
      turnComments: [{ turnIndex: 2, comment: "here" }],
      priority: "medium",
    });
    assertTicket(created, "create");
    assert.deepEqual(created.conversationIds, [conversationId]);
    conversationTicketId = created.agentqaTicketId;
    const commented = await client.conversationalAi.triageTickets.addComment(conversationTicketId, { comment: "Looking" });
    assert.equal(commented.ticketComments.length, 1);
    const turned = await client.conversationalAi.triageTickets.addTurnComment(conversationTicketId, { turnIndex: 4, comment: "again" });
    assert.equal(turned.turnComments.length, 2);
    const updated = await client.conversationalAi.triageTickets.update(conversationTicketId, { status: "in_progress", title: "Wrong price" });
    assert.equal(updated.status, "in_progress");
    assert.equal(updated.title, "Wrong price");
    assert.equal(updated.statusChanges.at(-1).status, "in_progress");
  });

  it("merge parses and folds the manual ticket in", { timeout: TEST_TIMEOUT_MS }, async (t) => {
    if (!conversationTicketId) {
      t.skip("no conversation ticket to merge into");
      return;
    }
    const merged = await client.conversationalAi.triageTickets.merge(conversationTicketId, { sourceTicketIds: [manualId] });
    assertTicket(merged, "merge");
    assert.equal(merged.priority, "high");
    const source = await client.conversationalAi.triageTickets.get(manualId);
    assert.equal(source.status, "merged");
    assert.equal(source.mergedIntoTicketId, conversationTicketId);
  });

  it("list, listForWorkspace and listAssignableUsers parse", { timeout: TEST_TIMEOUT_MS }, async () => {
    const perAgent = await client.conversationalAi.triageTickets.list(agentId, { pageSize: 1 });
    assert.equal(perAgent.agentConversationTickets.length, 1);
    assert.equal(typeof perAgent.hasMore, "boolean");
    const all = await client.conversationalAi.triageTickets.listForWorkspace({ agentId, sources: ["manual", "qa"], sortBy: "priority" });
    assert.ok(all.agentConversationTickets.length >= 1);
    all.agentConversationTickets.forEach((t, i) => assertTicket(t, `listForWorkspace[${i}]`));
    const searched = await client.conversationalAi.triageTickets.listForWorkspace({ search: "REFUNDS" });
    assert.ok(searched.agentConversationTickets.some((t) => t.agentqaTicketId === manualId && t.searchMatch?.field === "title"));
    // The workspace's people are assignable, not its service accounts:
    // one is invited (a member at once here), then listed.
    const email = `${uniqueName("assignee").toLowerCase().replace(/[^a-z0-9]/g, "")}@example.com`;
    assert.equal((await client.workspace.invites.create({ email })).status, "ok");
    let users = [];
    for (const deadline = Date.now() + 10_000; ; await sleep(50)) {
      users = await client.conversationalAi.triageTickets.listAssignableUsers(agentId);
      if (users.some((u) => u.email === email)) break;
      assert.ok(Date.now() < deadline, `the member never became assignable: ${JSON.stringify(users)}`);
    }
    assert.ok(users.every((u) => !u.isServiceAccount), `a service account is assignable: ${JSON.stringify(users)}`);
    assertNonEmptyString(users[0].userId, "userId");
    assert.equal(typeof users[0].hasAccess, "boolean");
  });

  it("a page_size over 100 is a 422", { timeout: TEST_TIMEOUT_MS }, async () => {
    await expectStatus(client.conversationalAi.triageTickets.listForWorkspace({ pageSize: 101 }), 422);
  });

  it("delete removes the ticket", { timeout: TEST_TIMEOUT_MS }, async () => {
    const extra = await client.conversationalAi.triageTickets.createManual(agentId, { qaComment: "to delete" });
    await client.conversationalAi.triageTickets.delete(extra.agentqaTicketId);
    await expectStatus(client.conversationalAi.triageTickets.get(extra.agentqaTicketId), 404);
  });
});
