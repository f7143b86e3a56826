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

  it("list with several triage filters at once, feedback and tags", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId } = await client.conversationalAi.agents.create({ name: uniqueName("triage"), conversationConfig: {} });
    const base = Date.now() - 3_600_000;
    const record = async (suffix, offsetSecs, { outcome, secs, words, tool, accuracy, city }) => {
      const id = `${uniqueName("triage").replaceAll(/[^A-Za-z0-9_-]/g, "_")}_${suffix}`;
      const start = new Date(base + offsetSecs * 1000);
      await publish("conversation_started", start.toISOString(), { conversation_id: id, agent_id: agentId });
      const turn = { role: "agent", message: words, time_in_call_secs: 1 };
      if (tool) {
        turn.tool_calls = [{ request_id: "r1", tool_name: tool.name, params_as_json: "{}", tool_has_been_called: true }];
        turn.tool_results = [{ request_id: "r1", tool_name: tool.name, result_value: "x", is_error: tool.error, tool_has_been_called: true }];
      }
      await publish("conversation_ended", new Date(start.getTime() + secs * 1000).toISOString(), {
        conversation_id: id,
        agent_id: agentId,
        call_successful: outcome,
        call_duration_secs: secs,
        transcript: [{ role: "user", message: "Hello there", time_in_call_secs: 0 }, turn],
        analysis: {
          transcript_summary: `A refund call from ${city}`,
          evaluation_criteria_results: { accuracy: { criteria_id: "accuracy", result: accuracy, rationale: "checked" } },
          data_collection_results: {
            city: { data_collection_id: "city", value: city },
            calls: { data_collection_id: "calls", value: 3, rationale: "said it called three times" },
            callback: { data_collection_id: "callback", value: null, rationale: "never asked" },
          },
        },
      });
      return id;
    };
    const denied = await record("a", 0, { outcome: "failure", secs: 120, words: "Your refund is denied", tool: { name: "refund", error: true }, accuracy: "failure", city: "Denver" });
    const paris = await record("b", 60, { outcome: "failure", secs: 120, words: "Your refund is denied", tool: { name: "refund", error: true }, accuracy: "failure", city: "Paris" });
    const fine = await record("c", 120, { outcome: "success", secs: 130, words: "Your refund is on its way", tool: { name: "refund", error: false }, accuracy: "success", city: "Denver" });
    const short = await record("d", 180, { outcome: "failure", secs: 10, words: "Your refund is denied", tool: { name: "refund", error: true }, accuracy: "failure", city: "Denver" });

    let all;
    for (let i = 0; i < 200; i++) {
      all = await client.conversationalAi.conversations.list({ agentId, excludeStatuses: ["in-progress"] });
      if (all.conversations.length === 4) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(all.conversations.map((c) => c.conversationId), [short, fine, paris, denied]);

    const filtered = await client.conversationalAi.conversations.list({
      agentId,
      callSuccessful: "failure",
      evaluationParams: ["accuracy:failure"],
      dataCollectionParams: ["city:eq:Denver"],
      toolNames: ["refund"],
      toolNamesErrored: ["refund"],
      callDurationMinSecs: 60,
      callDurationMaxSecs: 600,
      search: "refund DENIED",
      excludeStatuses: ["in-progress"],
      summaryMode: "include",
    });
    assert.deepEqual(filtered.conversations.map((c) => c.conversationId), [denied]);
    assert.equal(filtered.conversations[0].transcriptSummary, "A refund call from Denver");
    assert.deepEqual(filtered.conversations[0].toolNames, ["refund"]);

    // The analysis reads back as it was reported: a number stays a number,
    // rationales are kept, an item with nothing collected is listed.
    let reported;
    for (let i = 0; i < 200; i++) {
      reported = (await client.conversationalAi.conversations.get(denied)).analysis;
      if (reported.evaluationCriteriaResults.accuracy.rationale) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(reported.evaluationCriteriaResults.accuracy.rationale, "checked");
    assert.deepEqual(reported.dataCollectionResults.calls, { dataCollectionId: "calls", value: 3, rationale: "said it called three times" });
    assert.equal(reported.dataCollectionResults.callback.value ?? null, null);
    assert.equal(reported.dataCollectionResults.callback.rationale, "never asked");
    assert.equal(reported.dataCollectionResults.city.value, "Denver");

    // Feedback: a like is rating 5, a dislike 1.
    await client.conversationalAi.conversations.feedback.create(fine, { feedback: "like" });
    await client.conversationalAi.conversations.feedback.create(paris, { feedback: "dislike" });
    const liked = await client.conversationalAi.conversations.list({ agentId, ratingMin: 4 });
    assert.deepEqual(liked.conversations.map((c) => [c.conversationId, c.rating]), [[fine, 5]]);
    const disliked = await client.conversationalAi.conversations.list({ agentId, ratingMax: 2 });
    assert.deepEqual(disliked.conversations.map((c) => c.conversationId), [paris]);
    const got = await client.conversationalAi.conversations.get(fine);
    assert.equal(got.metadata.feedback.overallScore, "like");

    // Tags: create, read, rename, attach, filter, detach, delete.
    const tags = client.conversationalAi.conversations.tags;
    const tag = await tags.create({ title: uniqueName("wrong-refund"), description: "quoted the wrong rule" });
    assert.ok(tag.tagId);
    assert.equal((await tags.get(tag.tagId)).description, "quoted the wrong rule");
    assert.equal((await tags.update(tag.tagId, { title: "Wrong refund rule" })).title, "Wrong refund rule");
    assert.ok((await tags.list({ pageSize: 100 })).conversationTags.some((t) => t.tagId === tag.tagId));
    await tags.assign(denied, { tagIds: [tag.tagId] });
    await tags.assign(short, { tagIds: [tag.tagId] });
    const tagged = await client.conversationalAi.conversations.list({ tagIds: [tag.tagId], callDurationMinSecs: 60 });
    assert.deepEqual(tagged.conversations.map((c) => [c.conversationId, c.tagIds]), [[denied, [tag.tagId]]]);
    assert.deepEqual((await client.conversationalAi.conversations.get(denied)).tagIds, [tag.tagId]);
    await tags.unassign(denied, tag.tagId);
    const left = await client.conversationalAi.conversations.list({ tagIds: [tag.tagId] });
    assert.deepEqual(left.conversations.map((c) => c.conversationId), [short]);
    await tags.delete(tag.tagId);
    await expectStatus(tags.get(tag.tagId), 404);
    await expectStatus(client.conversationalAi.conversations.list({ tagIds: [tag.tagId] }), 404);

    // Ill-formed filters are a 422 naming the parameter.
    await expectStatus(client.conversationalAi.conversations.list({ dataCollectionParams: ["city:like:Denver"] }), 422);
    await expectStatus(client.conversationalAi.conversations.list({ evaluationParams: ["accuracy"] }), 422);
    await expectStatus(client.conversationalAi.conversations.feedback.create("conv_never_seen", { feedback: "like" }), 404);
  });

  it("an unknown conversation is a 404", { timeout: TEST_TIMEOUT_MS }, async () => {
    await expectStatus(client.conversationalAi.conversations.get("conv_never_seen"), 404);
  });
});

describe("conversations.delete", () => {
  const client = adminClient({ maxRetries: 0 });

  it("deletes a conversation for good: get and list no longer show it, a second delete is a 404 but for the keyed delete sent again", { timeout: TEST_TIMEOUT_MS }, async () => {
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

    // Under an Idempotency-Key the same delete sent again (a retry after a
    // lost answer) is answered as the first was, not with a 404.
    const keyed = { headers: { "Idempotency-Key": uniqueName("delete-key") } };
    const answer = await client.conversationalAi.conversations.delete(conversationId, keyed);
    assert.deepEqual(answer, {});
    assert.deepEqual(await client.conversationalAi.conversations.delete(conversationId, keyed), {});
    await expectStatus(client.conversationalAi.conversations.get(conversationId), 404);
    const page = await client.conversationalAi.conversations.list({ agentId });
    assert.equal(page.conversations.length, 0);
    await expectStatus(client.conversationalAi.conversations.delete(conversationId), 404);
    await expectStatus(client.conversationalAi.conversations.delete("conv_never_seen"), 404);
  });
});
