// Conversations through the official SDK: conversationalAi.conversations.list
// and .get parse our answers. The conversation is recorded as a call stack
// records one, with the platform events it sends (POST /v1/convai/events,
// our extension: the SDK has no method for it), conversation_ended carrying
// its transcript.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { TEST_TIMEOUT_MS, adminClient, expectStatus, settings, uniqueName } from "./helpers.mjs";

async function publish(event, timestamp, data) {
  const { baseUrl, apiKey } = settings();
  const res = await fetch(`${baseUrl}/v1/convai/events`, {
    method: "POST",
    headers: { "content-type": "application/json", "xi-api-key": apiKey },
    body: JSON.stringify({ event, timestamp, data }),
  });
  assert.equal(res.status, 202, `publish ${event}: ${res.status} ${await res.text()}`);
}

describe("conversations", () => {
  const client = adminClient({ maxRetries: 0 });

  it("list and get parse, with the transcript handed over", { timeout: TEST_TIMEOUT_MS }, async () => {
    const name = uniqueName("conversations");
    const { agentId } = await client.conversationalAi.agents.create({ name, conversationConfig: {} });
    const conversationId = uniqueName("conv").replaceAll(/[^A-Za-z0-9_-]/g, "_");
    const start = new Date(Date.now() - 60_000);
    await publish("conversation_started", start.toISOString(), { conversation_id: conversationId, agent_id: agentId });
    await publish("conversation_ended", new Date(start.getTime() + 30_000).toISOString(), {
      conversation_id: conversationId,
      agent_id: agentId,
      call_successful: "failure",
      transcript: [
        { role: "user", message: "Where is my refund?", time_in_call_secs: 0 },
        { role: "agent", message: "Refunds take a year.", time_in_call_secs: 3 },
      ],
    });

    // The conversation is listed (and its transcript kept) a moment later.
    let page;
    let conversation;
    for (let i = 0; i < 200; i++) {
      page = await client.conversationalAi.conversations.list({ agentId, pageSize: 10 });
      if (page.conversations.length === 1 && page.conversations[0].status === "done") {
        conversation = await client.conversationalAi.conversations.get(conversationId);
        if (conversation.transcript.length === 2) break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(page.hasMore, false);
    const [row] = page.conversations;
    assert.equal(row.conversationId, conversationId);
    assert.equal(row.agentId, agentId);
    assert.equal(row.callSuccessful, "failure");
    assert.equal(row.messageCount, 2);
    assert.equal(row.callDurationSecs, 30);
    assert.equal(row.startTimeUnixSecs, Math.floor(start.getTime() / 1000));

    assert.equal(conversation.conversationId, conversationId);
    assert.equal(conversation.status, "done");
    assert.equal(conversation.metadata.callDurationSecs, 30);
    assert.equal(conversation.analysis.callSuccessful, "failure");
    assert.equal(conversation.hasAudio, false);
    assert.deepEqual(
      conversation.transcript.map((t) => [t.role, t.message, t.timeInCallSecs]),
      [["user", "Where is my refund?", 0], ["agent", "Refunds take a year.", 3]],
    );

    const filtered = await client.conversationalAi.conversations.list({ agentId, callSuccessful: "success" });
    assert.equal(filtered.conversations.length, 0);

    // The agents listing shows the agent's latest call: when it started.
    let listed;
    for (let i = 0; i < 200; i++) {
      [listed] = (await client.conversationalAi.agents.list({ search: name })).agents;
      if (listed?.lastCallTimeUnixSecs != null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(listed.agentId, agentId);
    assert.equal(listed.lastCallTimeUnixSecs, Math.floor(start.getTime() / 1000));
  });

  it("analysis.run re-judges a recorded conversation, and get shows the stored analysis", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId } = await client.conversationalAi.agents.create({
      name: uniqueName("analysis"),
      conversationConfig: {},
      platformSettings: {
        evaluation: {
          criteria: [{ id: "hours", name: "Hours given", type: "prompt", conversationGoalPrompt: "The agent states the opening hours nine to five" }],
        },
      },
    });
    const conversationId = uniqueName("conv").replaceAll(/[^A-Za-z0-9_-]/g, "_");
    const start = new Date(Date.now() - 60_000);
    await publish("conversation_started", start.toISOString(), { conversation_id: conversationId, agent_id: agentId });
    await publish("conversation_ended", new Date(start.getTime() + 30_000).toISOString(), {
      conversation_id: conversationId,
      agent_id: agentId,
      call_successful: "success",
      transcript: [
        { role: "user", message: "When are you open?", time_in_call_secs: 0 },
        { role: "agent", message: "Our opening hours are nine to five every weekday.", time_in_call_secs: 3 },
      ],
    });
    for (let i = 0; i < 200; i++) {
      const c = await client.conversationalAi.conversations.get(conversationId).catch(() => null);
      if (c?.transcript.length === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }

    // The SDK parses the answer as a conversation, the new analysis in it.
    const analysed = await client.conversationalAi.conversations.analysis.run(conversationId);
    assert.equal(analysed.conversationId, conversationId);
    assert.equal(analysed.transcript.length, 2);
    assert.equal(analysed.analysis.evaluationCriteriaResults.hours.result, "success");
    assert.equal(analysed.analysis.callSuccessful, "success");

    // It is stored: get shows it (with its judge, our extension) a moment later.
    let conversation;
    for (let i = 0; i < 200; i++) {
      conversation = await client.conversationalAi.conversations.get(conversationId);
      if (conversation.analysis.evaluationCriteriaResultsList?.length === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(conversation.analysis.evaluationCriteriaResultsList[0].criteriaId, "hours");
    assert.equal(conversation.analysis.evaluationCriteriaResults.hours.result, "success");
    assert.equal(conversation.analysis.judge.judge_model, analysed.model_usage.model);

    await expectStatus(client.conversationalAi.conversations.analysis.run("conv_never_seen"), 404);
  });

  it("an unknown conversation is a 404", { timeout: TEST_TIMEOUT_MS }, async () => {
    await expectStatus(client.conversationalAi.conversations.get("conv_never_seen"), 404);
  });
});

describe("conversations.delete", () => {
  const client = adminClient({ maxRetries: 0 });

  it("deletes a conversation for good: get and list no longer show it, a second delete is a 404", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId } = await client.conversationalAi.agents.create({ name: uniqueName("delete"), conversationConfig: {} });
    const conversationId = uniqueName("conv").replaceAll(/[^A-Za-z0-9_-]/g, "_");
    const start = new Date(Date.now() - 60_000);
    await publish("conversation_started", start.toISOString(), { conversation_id: conversationId, agent_id: agentId });
    await publish("conversation_ended", new Date(start.getTime() + 20_000).toISOString(), {
      conversation_id: conversationId,
      agent_id: agentId,
      transcript: [
        { role: "user", message: "My date of birth is 1 April 1990.", time_in_call_secs: 0 },
        { role: "agent", message: "Thank you.", time_in_call_secs: 2 },
      ],
    });
    let conversation;
    for (let i = 0; i < 200; i++) {
      conversation = await client.conversationalAi.conversations.get(conversationId).catch(() => null);
      if (conversation?.transcript.length === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(conversation.transcript[0].message, "My date of birth is 1 April 1990.");

    const answer = await client.conversationalAi.conversations.delete(conversationId);
    assert.deepEqual(answer, {});
    await expectStatus(client.conversationalAi.conversations.get(conversationId), 404);
    const page = await client.conversationalAi.conversations.list({ agentId });
    assert.equal(page.conversations.length, 0);
    await expectStatus(client.conversationalAi.conversations.delete(conversationId), 404);
    await expectStatus(client.conversationalAi.conversations.delete("conv_never_seen"), 404);
  });
});
