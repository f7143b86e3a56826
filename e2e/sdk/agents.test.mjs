// Agents through the official SDK: create, get, list (paging, search),
// summaries and authentication failures. Tests in this file run in order
// and share the agent created by the first one.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";

import {
  TEST_TIMEOUT_MS,
  adminClient,
  assertNonEmptyString,
  clientFor,
  expectStatus,
  uniqueName,
} from "./helpers.mjs";

// Upper bound on pages walked with pageSize 1, so a server whose cursor
// never ends fails the test instead of looping.
const MAX_PAGES = 2_000;

const FIRST_MESSAGE = "Hi";
const PROMPT = "You are a helpful agent";

// *_unix_secs must be seconds (not milliseconds) and roughly now.
function assertRecentUnixSecs(value, what) {
  assert.ok(Number.isInteger(value), `${what} = ${value}, want an integer`);
  const now = Date.now() / 1000;
  assert.ok(Math.abs(value - now) < 24 * 3600, `${what} = ${value} is not within a day of now (${now})`);
}

describe("agents", () => {
  const name = uniqueName("e2e-agent");
  let agentId;
  const createdAgent = () => {
    assert.ok(agentId, "no agent to check: the create test failed");
    return agentId;
  };

  it("agents.create returns a non-empty agentId", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { data, rawResponse } = await adminClient()
      .conversationalAi.agents.create({
        name,
        conversationConfig: {
          agent: { firstMessage: FIRST_MESSAGE, prompt: { prompt: PROMPT } },
        },
        tags: ["e2e"],
      })
      .withRawResponse();
    assertNonEmptyString(data.agentId, "agentId");
    agentId = data.agentId;
    assertNonEmptyString(rawResponse.headers.get("x-request-id"), "X-Request-Id response header");
  });

  it("agents.get returns the agent with the same id and name", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const agent = await adminClient().conversationalAi.agents.get(id);
    assert.equal(agent.agentId, id);
    assert.equal(agent.name, name);
    assert.equal(agent.conversationConfig.agent?.firstMessage, FIRST_MESSAGE);
    assert.equal(agent.conversationConfig.agent?.prompt?.prompt, PROMPT);
    assertRecentUnixSecs(agent.metadata.createdAtUnixSecs, "metadata.createdAtUnixSecs");
    assertRecentUnixSecs(agent.metadata.updatedAtUnixSecs, "metadata.updatedAtUnixSecs");
    assert.ok(agent.metadata.updatedAtUnixSecs >= agent.metadata.createdAtUnixSecs, "updated before created");
    if (agent.tags !== undefined) {
      assert.deepEqual(agent.tags, ["e2e"]);
    }
  });

  it("agents.list with pageSize 1 pages to the end and finds the agent", { timeout: 2 * TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const client = adminClient();
    const seen = new Set();
    let found;
    let cursor;
    for (let pages = 1; ; pages++) {
      assert.ok(pages <= MAX_PAGES, `still hasMore after ${MAX_PAGES} pages`);
      const page = await client.conversationalAi.agents.list({ pageSize: 1, cursor });
      assert.ok(page.agents.length <= 1, `pageSize 1 returned ${page.agents.length} agents`);
      for (const a of page.agents) {
        assert.ok(!seen.has(a.agentId), `agent ${a.agentId} returned on two pages`);
        seen.add(a.agentId);
        if (a.agentId === id) found = a;
      }
      if (!page.hasMore) break;
      assert.equal(page.agents.length, 1, "a page with hasMore must not be empty");
      assertNonEmptyString(page.nextCursor, "nextCursor of a page with hasMore");
      assert.notEqual(page.nextCursor, cursor, "nextCursor did not advance");
      cursor = page.nextCursor;
    }
    assert.ok(found, `agent ${id} not found in ${seen.size} agents paged with pageSize 1`);
    assert.equal(found.name, name);
    assert.ok(found.tags.includes("e2e"), `tags = ${JSON.stringify(found.tags)}`);
    assertRecentUnixSecs(found.createdAtUnixSecs, "createdAtUnixSecs");
  });

  it("agents.list takes sortBy call_count_7d (listed in creation order)", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const page = await adminClient().conversationalAi.agents.list({ sortBy: "call_count_7d", search: name });
    assert.ok(page.agents.some((a) => a.agentId === id), `sortBy call_count_7d returned ${JSON.stringify(page.agents)}`);
  });

  it("agents.list with search finds the agent by name", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const client = adminClient();
    const page = await client.conversationalAi.agents.list({ search: name });
    const hit = page.agents.find((a) => a.agentId === id);
    assert.ok(hit, `search ${JSON.stringify(name)} returned ${JSON.stringify(page.agents.map((a) => a.name))}`);
    assert.equal(hit.name, name);

    const none = await client.conversationalAi.agents.list({ search: uniqueName("e2e-no-such-agent") });
    assert.deepEqual(none.agents, [], "search for a name nobody has must return no agents");
    assert.equal(none.hasMore, false);
  });

  it("agents.summaries.get answers each id: the agent, or a 404 failure", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const missing = `agent_e2e_missing_${randomBytes(8).toString("hex")}`;
    const got = await adminClient().conversationalAi.agents.summaries.get({ agentIds: [id, missing] });
    assert.equal(got[id]?.status, "success", JSON.stringify(got));
    assert.equal(got[id].data.agentId, id);
    assert.equal(got[id].data.name, name);
    assertRecentUnixSecs(got[id].data.createdAtUnixSecs, "data.createdAtUnixSecs");
    assert.equal(got[missing]?.status, "failure", JSON.stringify(got));
    assert.equal(got[missing].errorCode, 404);
    assert.equal(got[missing].errorStatus, "agent_not_found");
  });

  it("agents.create takes a customLlm on the Responses API (apiType responses)", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId: id } = await adminClient().conversationalAi.agents.create({
      name: uniqueName("e2e-agent-responses"),
      conversationConfig: {
        agent: {
          firstMessage: FIRST_MESSAGE,
          prompt: {
            prompt: PROMPT,
            llm: "custom-llm",
            customLlm: { url: "https://llm.example.com/v1", modelId: "team-responses-1", apiType: "responses" },
          },
        },
      },
    });
    assertNonEmptyString(id, "agentId");
    const got = await adminClient().conversationalAi.agents.get(id);
    const custom = got.conversationConfig.agent?.prompt?.customLlm;
    assert.equal(custom?.apiType, "responses");
    assert.equal(custom?.modelId, "team-responses-1");
  });

  it("agents.get of an unknown id fails with 404", { timeout: TEST_TIMEOUT_MS }, async () => {
    await expectStatus(
      adminClient({ maxRetries: 0 }).conversationalAi.agents.get(`agent_e2e_missing_${randomBytes(8).toString("hex")}`),
      404,
    );
  });

  it("agents.delete and agents.update of an id that only cleans to the agent's path leave the agent alone", { timeout: TEST_TIMEOUT_MS }, async () => {
    // The SDK escapes the id ("x%2F..%2F" + id). A gateway that cleaned the
    // path answered 301 to the agent's own, and fetch, which keeps DELETE
    // and PATCH across a 301, deleted or renamed it.
    const id = createdAgent();
    const client = adminClient({ maxRetries: 0 });
    await expectStatus(client.conversationalAi.agents.update(`x/../${id}`, { name: "renamed through a traversal" }), 404);
    await expectStatus(client.conversationalAi.agents.delete(`x/../${id}`), 404);
    const agent = await client.conversationalAi.agents.get(id);
    assert.equal(agent.name, name);
  });

  it("agents.update changes the name, tags and prompt, and agents.get answers the change", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = createdAgent();
    const client = adminClient();
    const renamed = `${name}-renamed`;
    const prompt = "You are a careful agent";
    const updated = await client.conversationalAi.agents.update(id, {
      name: renamed,
      tags: ["e2e", "updated"],
      conversationConfig: { agent: { prompt: { prompt } } },
    });
    assert.equal(updated.agentId, id);
    assert.equal(updated.name, renamed);
    assert.equal(updated.conversationConfig.agent?.prompt?.prompt, prompt);
    const agent = await client.conversationalAi.agents.get(id);
    assert.equal(agent.name, renamed);
    assert.equal(agent.conversationConfig.agent?.prompt?.prompt, prompt);
    if (agent.tags !== undefined) {
      assert.deepEqual(agent.tags, ["e2e", "updated"]);
    }
    assert.ok(agent.metadata.updatedAtUnixSecs >= agent.metadata.createdAtUnixSecs, "updated before created");
  });

  it("a wrong API key is rejected with 401", { timeout: TEST_TIMEOUT_MS }, async () => {
    const wrong = clientFor(`wrong-${randomBytes(16).toString("hex")}`, { maxRetries: 0 });
    const err = await expectStatus(wrong.conversationalAi.agents.list({ pageSize: 1 }), 401);
    assertNonEmptyString(err.requestId, "X-Request-Id on the 401 response");
  });
});
