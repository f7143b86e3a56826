// Workspace secrets through the official SDK (conversationalAi.secrets):
// create, list, get, update, delete; an agent created with customLlm whose
// key is the secret; a secret in use cannot be deleted. Tests in this file
// run in order and share what the first ones create.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { TEST_TIMEOUT_MS, adminClient, assertNonEmptyString, expectStatus, uniqueName } from "./helpers.mjs";

const VALUE = `sk-e2e-${Date.now().toString(36)}`;

describe("workspace secrets", () => {
  const name = uniqueName("e2e-secret");
  let secretId;
  let agentId;
  const strict = () => adminClient({ maxRetries: 0 });

  it("secrets.create stores the secret and answers its id, never its value", { timeout: TEST_TIMEOUT_MS }, async () => {
    const created = await adminClient().conversationalAi.secrets.create({ name, value: VALUE });
    assert.equal(created.type, "stored");
    assertNonEmptyString(created.secretId, "secretId");
    assert.equal(created.name, name);
    assert.ok(!JSON.stringify(created).includes(VALUE), "the answer holds the value");
    secretId = created.secretId;
  });

  it("agents.create takes a customLlm whose apiKey is the secret", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = await adminClient().conversationalAi.agents.create({
      name: uniqueName("e2e-custom-llm"),
      conversationConfig: {
        agent: {
          prompt: {
            prompt: "You are the team's own agent.",
            llm: "custom-llm",
            customLlm: { url: "https://llm.example.com/v1", modelId: "team-ft-1", apiKey: { secretId } },
          },
        },
      },
    });
    agentId = agent.agentId;
    const got = await adminClient().conversationalAi.agents.get(agentId);
    const custom = got.conversationConfig.agent?.prompt?.customLlm;
    assert.equal(custom?.url, "https://llm.example.com/v1");
    assert.equal(custom?.modelId, "team-ft-1");
    assert.deepEqual(custom?.apiKey, { secretId });
  });

  it("secrets.list finds it by name with the agent that uses it", { timeout: TEST_TIMEOUT_MS }, async () => {
    const page = await adminClient().conversationalAi.secrets.list({ search: name, pageSize: 10 });
    const found = page.secrets.find((s) => s.secretId === secretId);
    assert.ok(found, `secret ${secretId} not listed: ${JSON.stringify(page)}`);
    assert.equal(found.name, name);
    assert.deepEqual(found.usedBy.agents.map((a) => a.id), [agentId]);
    assert.ok(!JSON.stringify(page).includes(VALUE), "the listing holds the value");
  });

  it("secrets.get and secrets.update rename it; the value stays hidden", { timeout: TEST_TIMEOUT_MS }, async () => {
    const updated = await adminClient().conversationalAi.secrets.update(secretId, { name: `${name}-2`, value: `${VALUE}-2` });
    assert.equal(updated.name, `${name}-2`);
    const got = await adminClient().conversationalAi.secrets.get(secretId);
    assert.equal(got.name, `${name}-2`);
    assert.ok(!JSON.stringify(got).includes(VALUE), "get holds the value");
  });

  it("secrets.delete of a secret in use is refused (409); once unused it is deleted", { timeout: TEST_TIMEOUT_MS }, async () => {
    await expectStatus(strict().conversationalAi.secrets.delete(secretId), 409);
    await adminClient().conversationalAi.agents.delete(agentId);
    await adminClient().conversationalAi.secrets.delete(secretId);
    await expectStatus(strict().conversationalAi.secrets.get(secretId), 404);
  });
});
