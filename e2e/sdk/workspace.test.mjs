// The workspace's members through the official SDK: an invitation makes a
// member at once (a self-hosted platform sends none to accept), the list
// reads members as the SDK's types have them, and an update changes a
// member's seat and lock. A locked member is no ticket's assignee.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { TEST_TIMEOUT_MS, adminClient, expectStatus, uniqueName } from "./helpers.mjs";

const opts = { timeout: TEST_TIMEOUT_MS };

describe("workspace members", () => {
  const client = adminClient();
  const email = `${uniqueName("member").toLowerCase().replace(/[^a-z0-9]/g, "")}@example.com`;

  const member = async () => {
    const members = await client.workspace.members.list();
    assert.ok(Array.isArray(members), `members.list answered no array: ${JSON.stringify(members)}`);
    return members.find((m) => m.email === email);
  };

  it("invites.create makes a member, as members.list reads it", opts, async () => {
    const invited = await client.workspace.invites.create({ email, seatType: "workspace_member" });
    assert.equal(invited.status, "ok");
    const m = await member();
    assert.ok(m, "the invited member is not listed");
    assert.equal(typeof m.userId, "string");
    assert.equal(m.seatType, "workspace_member");
    assert.equal(m.isOwner, false);
    assert.equal(m.isLocked, false);
    await expectStatus(client.workspace.invites.create({ email }), 409);
  });

  it("members.update changes the seat and locks the member, who is then assigned nothing", opts, async () => {
    const updated = await client.workspace.members.update({ email, workspaceSeatType: "workspace_admin", isLocked: true });
    assert.equal(updated.status, "ok");
    const m = await member();
    assert.equal(m.seatType, "workspace_admin");
    assert.equal(m.isLocked, true);

    const agent = await client.conversationalAi.agents.create({ name: uniqueName("members-agent"), conversationConfig: {} });
    const ticket = await client.conversationalAi.triageTickets.createManual(agent.agentId, { qaComment: "who takes it" });
    let users = [];
    for (const deadline = Date.now() + 10_000; ; await sleep(50)) {
      users = await client.conversationalAi.triageTickets.listAssignableUsers(agent.agentId);
      if (users.some((u) => u.userId === m.userId)) break;
      assert.ok(Date.now() < deadline, `the member never became assignable: ${JSON.stringify(users)}`);
    }
    assert.equal(users.find((u) => u.userId === m.userId).hasAccess, false);
    await expectStatus(client.conversationalAi.triageTickets.update(ticket.agentqaTicketId, { assigneeUserId: m.userId }), 422);

    await client.workspace.members.update({ email, isLocked: false });
    for (const deadline = Date.now() + 10_000; ; await sleep(50)) {
      users = await client.conversationalAi.triageTickets.listAssignableUsers(agent.agentId);
      if (users.find((u) => u.userId === m.userId)?.hasAccess) break;
      assert.ok(Date.now() < deadline, `the unlocked member never had access: ${JSON.stringify(users)}`);
    }
    const assigned = await client.conversationalAi.triageTickets.update(ticket.agentqaTicketId, { assigneeUserId: m.userId });
    assert.equal(assigned.assigneeUserId, m.userId);
  });

  it("members.update of an address that is no member is a 404", opts, async () => {
    await expectStatus(client.workspace.members.update({ email: `nobody-${email}`, isLocked: true }), 404);
  });
});
