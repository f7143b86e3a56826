// agents.simulateConversation through the official SDK: a conversation
// played now by the platform's runners, the same engine as simulation
// tests, with an analysis per evaluation criterion.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { TEST_TIMEOUT_MS, adminClient, uniqueName } from "./helpers.mjs";

describe("simulate-conversation", () => {
  it("agents.simulateConversation plays the conversation and judges each criterion", { timeout: TEST_TIMEOUT_MS }, async () => {
    const client = adminClient();
    const { agentId } = await client.conversationalAi.agents.create({
      name: uniqueName("e2e-simulate"),
      conversationConfig: {
        agent: {
          firstMessage: "Hello, how can I help?",
          prompt: { prompt: "You help customers. Our opening hours are nine to five every weekday." },
        },
      },
    });
    const result = await client.conversationalAi.agents.simulateConversation(agentId, {
      simulationSpecification: {
        simulatedUserConfig: {
          firstMessage: "What are your opening hours?",
          prompt: { prompt: "You want to know the opening hours." },
        },
      },
      extraEvaluationCriteria: [
        { id: "hours", name: "Opening hours", conversationGoalPrompt: "The agent states the opening hours nine to five" },
      ],
      newTurnsLimit: 2,
    });
    const conv = result.simulatedConversation;
    assert.ok(conv.length >= 3, `conversation: ${JSON.stringify(conv)}`);
    assert.equal(conv[0].role, "agent");
    assert.equal(conv[1].role, "user");
    assert.equal(conv[1].message, "What are your opening hours?");
    assert.match(conv[2].message ?? "", /nine to five/);
    assert.equal(result.analysis.evaluationCriteriaResults?.hours?.result, "success");
    assert.equal(result.analysis.callSuccessful, "success");
    assert.equal(typeof result.analysis.transcriptSummary, "string");
    await client.conversationalAi.agents.delete(agentId);
  });
});
