// Sanity checks that need no server: the pinned SDK loads as an ES module
// and exposes the methods the end-to-end tests call.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";

const require = createRequire(import.meta.url);

test("the pinned SDK version is installed", () => {
  const pinned = require("./package.json").dependencies["@elevenlabs/elevenlabs-js"];
  const installed = require("@elevenlabs/elevenlabs-js/package.json").version;
  assert.equal(installed, pinned);
});

test("the SDK module imports and exposes the methods under test", () => {
  assert.equal(typeof ElevenLabsClient, "function");
  assert.equal(typeof ElevenLabsError, "function");
  const client = new ElevenLabsClient({
    apiKey: "k",
    baseUrl: "http://127.0.0.1:1",
    headers: { "x-api-key": "k" },
  });
  const agents = client.conversationalAi.agents;
  for (const m of ["create", "get", "list", "runTests", "simulateConversation"]) assert.equal(typeof agents[m], "function", `agents.${m}`);
  const tests = client.conversationalAi.tests;
  for (const m of ["create", "get", "update", "list", "summaries", "delete"]) {
    assert.equal(typeof tests[m], "function", `conversationalAi.tests.${m}`);
  }
  for (const m of ["create", "get", "update", "delete"]) {
    assert.equal(typeof tests.folders[m], "function", `conversationalAi.tests.folders.${m}`);
  }
  for (const m of ["get", "list", "resubmit"]) {
    assert.equal(typeof tests.invocations[m], "function", `conversationalAi.tests.invocations.${m}`);
  }
  for (const m of ["create", "list", "get", "update", "delete"]) {
    assert.equal(typeof client.conversationalAi.secrets[m], "function", `conversationalAi.secrets.${m}`);
  }
  const conversations = client.conversationalAi.conversations;
  for (const m of ["list", "get"]) assert.equal(typeof conversations[m], "function", `conversations.${m}`);
  assert.equal(typeof conversations.feedback.create, "function", "conversations.feedback.create");
  for (const m of ["create", "list", "get", "update", "delete", "assign", "unassign"]) {
    assert.equal(typeof conversations.tags[m], "function", `conversations.tags.${m}`);
  }
  for (const m of ["create", "list"]) assert.equal(typeof client.serviceAccounts[m], "function", `serviceAccounts.${m}`);
  for (const m of ["create", "list", "update", "delete", "constructEvent"]) {
    assert.equal(typeof client.webhooks[m], "function", `webhooks.${m}`);
  }
  const apiKeys = client.serviceAccounts.apiKeys;
  for (const m of ["create", "list", "update", "delete"]) {
    assert.equal(typeof apiKeys[m], "function", `serviceAccounts.apiKeys.${m}`);
  }
});
