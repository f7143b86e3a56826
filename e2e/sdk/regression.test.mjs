// A regression test made from a production conversation (POST
// /v1/convai/agent-testing/from-conversation, this platform's extension of
// the public API, so posted with fetch), then read and run through the
// official SDK: its GET must parse with the SDK's own schemas, and the run
// must answer the agent's tool call with the result production saw.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { TEST_TIMEOUT_MS, adminClient, assertNonEmptyString, settings, uniqueName } from "./helpers.mjs";

const PROD_RESULT = "Order 4521 was shipped on Monday and arrives Thursday.";

// A transcript as the hosted platform's GET conversation answers it: the
// agent called its tool, got the result, then stated the wrong day.
const TRANSCRIPT = [
  { role: "agent", message: "Hi, this is Acme support.", time_in_call_secs: 0, tool_calls: [], source_medium: "audio" },
  { role: "user", message: "I want to know the status of order 4521.", time_in_call_secs: 3, tool_calls: [] },
  {
    role: "agent", message: null, time_in_call_secs: 5, agent_metadata: { agent_id: "agent_prod", workflow_node_id: "node_orders" },
    tool_calls: [{ type: "webhook", request_id: "call_1", tool_name: "get_order_status", params_as_json: '{"order_id":"4521"}', tool_has_been_called: true }],
  },
  {
    role: "agent", message: null, time_in_call_secs: 6,
    tool_results: [{ request_id: "call_1", tool_name: "get_order_status", result_value: PROD_RESULT, is_error: false, tool_has_been_called: true, type: "webhook" }],
  },
  { role: "agent", message: "Your order arrives tomorrow.", time_in_call_secs: 7, agent_metadata: { agent_id: "agent_prod", workflow_node_id: "node_orders" } },
  { role: "user", message: "Great, thanks.", time_in_call_secs: 10 },
];

describe("regression test from a production conversation", () => {
  const client = adminClient();
  const prefix = uniqueName("e2e-regression");

  it("is created from the transcript, parsed by tests.get and run with production's tool result in its history", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId } = await client.conversationalAi.agents.create({
      name: `${prefix} agent`,
      conversationConfig: {
        agent: {
          firstMessage: "Hi, this is Acme support.",
          prompt: {
            prompt: "You are the support agent of Acme Shop. Orders ship within 2 business days.",
            tools: [{
              type: "webhook", name: "get_order_status", description: "Look up the delivery status of an order",
              apiSchema: { url: "https://example.com/orders" },
            }],
          },
        },
      },
    });

    const { baseUrl, apiKey } = settings();
    const res = await fetch(`${baseUrl}/v1/convai/agent-testing/from-conversation`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        agent_id: agentId, conversation_id: "conv_prod_1", transcript: TRANSCRIPT, turn_index: 4, ticket_id: "tkt_prod_7",
        name: `${prefix} order day`, success_condition: "The agent says order 4521 arrives Thursday",
      }),
    });
    const created = await res.json();
    assert.equal(res.status, 201, JSON.stringify(created));
    assertNonEmptyString(created.id, "id of the regression test");

    const got = await client.conversationalAi.tests.get(created.id);
    assert.equal(got.type, "llm");
    assert.equal(got.name, `${prefix} order day`);
    assert.deepEqual(got.chatHistory.map((m) => [m.role, m.timeInCallSecs]), TRANSCRIPT.slice(0, 4).map((m) => [m.role, m.time_in_call_secs]));
    assert.equal(got.chatHistory[2].toolCalls[0].toolName, "get_order_status");
    assert.equal(got.chatHistory[3].toolResults[0].resultValue, PROD_RESULT);
    const meta = got.fromConversationMetadata;
    assert.equal(meta.conversationId, "conv_prod_1");
    assert.equal(meta.agentId, agentId);
    assert.equal(meta.branchId, "main");
    assert.equal(meta.workflowNodeId, "node_orders");
    assert.equal(meta.originalAgentReply[0].message, "Your order arrives tomorrow.");
    assert.equal(got.successCondition, "The agent says order 4521 arrives Thursday");

    const inv = await client.conversationalAi.agents.runTests(agentId, { tests: [{ testId: created.id }] });
    const deadline = Date.now() + 30_000;
    let run;
    for (;;) {
      [run] = (await client.conversationalAi.tests.invocations.get(inv.id)).testRuns;
      if (run.status !== "pending") break;
      assert.ok(Date.now() < deadline, `run still pending: ${JSON.stringify(run)}`);
      await sleep(100);
    }
    assert.equal(run.status, "passed", JSON.stringify(run.conditionResult));
    // The history carries the tool's production result: the agent states it.
    assert.ok(run.agentResponses.some((m) => m.role === "agent" && m.message === PROD_RESULT),
      `the production result is not in the reply: ${JSON.stringify(run.agentResponses)}`);
  });
});
