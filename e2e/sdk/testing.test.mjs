// Agent testing through the official SDK: conversationalAi.tests (create,
// get, update, list, summaries, delete, folders), agents.runTests and
// tests.invocations (get, list, resubmit), every response parsed by the
// SDK's own schemas. Tests in this file run in order and share the agent
// and tests created by the first ones.
//
// Outcomes are those of the platform's default, network-free "offline"
// model (services/testing/runner/offline.go): as the agent it calls the
// tool sharing the most words with the user's last message, or else answers
// with the sentence of its prompt (dynamic variables substituted) sharing
// the most words with it; as the judge it passes a reply closer to a
// success example than to every failure example. Tool tests are judged
// exactly: the referenced tool called once with matching parameters.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http from "node:http";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  ElevenLabsError,
  TEST_TIMEOUT_MS,
  adminClient,
  assertNonEmptyString,
  expectStatus,
  uniqueName,
} from "./helpers.mjs";

// Bounds on the waits for runners, so a stuck invocation fails the test
// instead of stalling it; offline runs finish in well under a second.
const POLL_DEADLINE_MS = 30_000;
const POLL_INTERVAL_MS = 100;
// Upper bound on pages walked with pageSize 1.
const MAX_PAGES = 100;

const PROMPT =
  "You help {{customer}} book tables. Our opening hours are nine to five every weekday. " +
  "Refunds are never given for cancelled bookings.";
const FIRST_MESSAGE = "Hello {{customer}}, how can I help?";
const TOOL = {
  type: "client",
  name: "book_table",
  description: "Book a table reservation for guests",
  parameters: {
    type: "object",
    properties: {
      guests: { type: "number", description: "How many guests" },
      date: { type: "string", description: "The day of the booking" },
    },
  },
};

// The llm test: the prompt's first sentence, with the test's dynamic
// variable substituted, is the reply; with the agent's placeholder value
// ("guest") it would match the failure example instead.
const GREETING_TEST = {
  chatHistory: [{ role: "user", message: "Who do you help?", timeInCallSecs: 2 }],
  successCondition: "The agent says it helps Ada Lovelace",
  successExamples: [{ response: "You help Ada Lovelace book tables.", type: "success" }],
  failureExamples: [{ response: "You help guest book tables.", type: "failure" }],
  dynamicVariables: { customer: "Ada Lovelace" },
  conversationInitiationSource: "js_sdk",
};
const GREETING_REPLY = "You help Ada Lovelace book tables.";

// An llm test the agent fails: its prompt refuses refunds.
const REFUND_TEST = {
  chatHistory: [
    { role: "agent", message: "Hello, how can I help?", timeInCallSecs: 0 },
    { role: "user", message: "Will I get a refund for cancelled bookings?", timeInCallSecs: 4 },
  ],
  successExamples: [{ response: "Yes, you will get a full refund right away.", type: "success" }],
  failureExamples: [{ response: "Refunds are never given for cancelled bookings.", type: "failure" }],
};
const REFUND_REPLY = "Refunds are never given for cancelled bookings.";

// The tool test: the agent must call book_table with guests 4 and a date
// starting with "fri".
const TOOL_TEST = {
  chatHistory: [{ role: "user", message: "Please book a table for 4 guests, date friday", timeInCallSecs: 1 }],
  toolCallParameters: {
    referencedTool: { id: "book_table", type: "client" },
    parameters: [
      { path: "guests", eval: { type: "exact", expectedValue: "4" } },
      { path: "date", eval: { type: "regex", pattern: "^fri" } },
    ],
  },
  checkAnyToolMatches: false,
};

// *_unix* values must be seconds (not milliseconds) and roughly now.
function assertRecentUnixSecs(value, what) {
  assert.ok(Number.isInteger(value), `${what} = ${value}, want an integer`);
  const now = Date.now() / 1000;
  assert.ok(Math.abs(value - now) < 24 * 3600, `${what} = ${value} is not within a day of now (${now})`);
}

/**
 * Calls fetch until done(result) holds, at most POLL_DEADLINE_MS, and
 * returns that result; fails with the last result otherwise.
 */
async function poll(what, fetch, done) {
  const deadline = Date.now() + POLL_DEADLINE_MS;
  for (;;) {
    const last = await fetch();
    if (done(last)) return last;
    if (Date.now() > deadline) {
      assert.fail(`${what}: not done after ${POLL_DEADLINE_MS} ms; last: ${JSON.stringify(last).slice(0, 4000)}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

const finished = (inv) => inv.testRuns.length > 0 && inv.testRuns.every((r) => r.status !== "pending");

/** The invocation once none of its runs is pending. */
function untilRunsFinish(client, invocationId) {
  return poll(`runs of ${invocationId} finish`, () => client.conversationalAi.tests.invocations.get(invocationId), finished);
}

/** Asserts a page of tests.list / a summaries value is a test summary. */
function assertSummary(s, what) {
  assertNonEmptyString(s.id, `${what}.id`);
  assertNonEmptyString(s.name, `${what}.name`);
  assert.ok(["llm", "tool", "simulation", "folder"].includes(s.type), `${what}.type = ${s.type}`);
  assertRecentUnixSecs(s.createdAtUnixSecs, `${what}.createdAtUnixSecs`);
  assertRecentUnixSecs(s.lastUpdatedAtUnixSecs, `${what}.lastUpdatedAtUnixSecs`);
  assert.ok(s.lastUpdatedAtUnixSecs >= s.createdAtUnixSecs, `${what} updated before created`);
}

/** Asserts the fields every run carries, whatever its status. */
function assertRun(run, inv, what) {
  assertNonEmptyString(run.testRunId, `${what}.testRunId`);
  assert.equal(run.testInvocationId, inv.id, `${what}.testInvocationId`);
  assert.equal(run.agentId, inv.agentId, `${what}.agentId`);
  assertNonEmptyString(run.testId, `${what}.testId`);
  assert.ok(["pending", "passed", "failed", "cancelled"].includes(run.status), `${what}.status = ${run.status}`);
  assert.ok(run.testInfo, `${what}.testInfo missing`);
  assert.ok(Array.isArray(run.testInfo.chatHistory), `${what}.testInfo.chatHistory`);
  assert.ok(Array.isArray(run.agentResponses), `${what}.agentResponses`);
  assertNonEmptyString(run.metadata?.workspaceId, `${what}.metadata.workspaceId`);
  assert.match(run.metadata.ranByUserEmail, /^[^@\s]+@[^@\s]+$/, `${what}.metadata.ranByUserEmail`);
  assert.equal(run.metadata.testName, run.testName, `${what}.metadata.testName`);
  assert.ok(Number.isInteger(run.lastUpdatedAtUnix), `${what}.lastUpdatedAtUnix = ${run.lastUpdatedAtUnix}`);
}

/** The runs of inv by test id (one run per test when repeatCount is 1). */
function runsByTest(inv) {
  const out = new Map();
  for (const r of inv.testRuns) out.set(r.testId, [...(out.get(r.testId) ?? []), r]);
  return out;
}

describe("agent testing", () => {
  const client = adminClient();
  const strict = adminClient({ maxRetries: 0 });
  const tests = client.conversationalAi.tests;
  // Every test made here carries this prefix, so search finds them all.
  const prefix = uniqueName("e2e-tests");
  const ids = {};
  let agentId;
  let firstInvocation; // the run of the greeting, refund and tool tests
  let repeatedInvocation; // repeatCount 2
  const need = (v, what) => {
    assert.ok(v, `no ${what} to use: an earlier test failed`);
    return v;
  };

  it("agents.create makes the agent under test, with a prompt, a first message and a tool", { timeout: TEST_TIMEOUT_MS }, async () => {
    const { agentId: id } = await client.conversationalAi.agents.create({
      name: `${prefix} agent`,
      tags: ["e2e"],
      conversationConfig: {
        agent: {
          firstMessage: FIRST_MESSAGE,
          // AgentConfig.dynamic_variables is untyped in the SDK: sent as is.
          dynamicVariables: { dynamic_variable_placeholders: { customer: "guest" } },
          prompt: { prompt: PROMPT, tools: [TOOL] },
        },
      },
    });
    assertNonEmptyString(id, "agentId");
    agentId = id;
    const agent = await client.conversationalAi.agents.get(id);
    assert.equal(agent.conversationConfig.agent?.prompt?.prompt, PROMPT);
    assert.equal(agent.conversationConfig.agent?.prompt?.tools?.[0]?.name, "book_table");
  });

  it("tests.create stores an llm test and tests.get returns every field", { timeout: TEST_TIMEOUT_MS }, async () => {
    const name = `${prefix} greeting`;
    const { id } = await tests.create({ type: "llm", name, ...GREETING_TEST });
    assertNonEmptyString(id, "id of the created llm test");
    ids.greeting = id;

    const got = await tests.get(id);
    assert.equal(got.id, id);
    assert.equal(got.type, "llm");
    assert.equal(got.name, name);
    assert.equal(got.chatHistory.length, 1);
    assert.equal(got.chatHistory[0].role, "user");
    assert.equal(got.chatHistory[0].message, "Who do you help?");
    assert.equal(got.chatHistory[0].timeInCallSecs, 2);
    assert.equal(got.successCondition, GREETING_TEST.successCondition);
    assert.deepEqual(got.successExamples, GREETING_TEST.successExamples);
    assert.deepEqual(got.failureExamples, GREETING_TEST.failureExamples);
    assert.deepEqual(got.dynamicVariables, { customer: "Ada Lovelace" });
    assert.equal(got.conversationInitiationSource, "js_sdk");
  });

  it("tests.create stores a tool test with a tool-call expectation", { timeout: TEST_TIMEOUT_MS }, async () => {
    const name = `${prefix} books a table`;
    const { id } = await tests.create({ type: "tool", name, ...TOOL_TEST });
    assertNonEmptyString(id, "id of the created tool test");
    ids.tool = id;

    const got = await tests.get(id);
    assert.equal(got.id, id);
    assert.equal(got.type, "tool");
    assert.equal(got.name, name);
    assert.equal(got.chatHistory[0].message, TOOL_TEST.chatHistory[0].message);
    assert.deepEqual(got.toolCallParameters.referencedTool, { id: "book_table", type: "client" });
    assert.deepEqual(got.toolCallParameters.parameters, TOOL_TEST.toolCallParameters.parameters);
    assert.equal(got.checkAnyToolMatches, false);
  });

  it("tests.update replaces the whole test and returns it", { timeout: TEST_TIMEOUT_MS }, async () => {
    // Created as a draft with a condition and examples the update drops.
    const { id } = await tests.create({
      type: "llm",
      name: `${prefix} refund draft`,
      chatHistory: [{ role: "user", message: "Refund?", timeInCallSecs: 1 }],
      successCondition: "The agent promises a refund",
      successExamples: [{ response: "Sure, refunded.", type: "success" }],
    });
    ids.refund = id;
    const before = await tests.get(id);

    const name = `${prefix} refund promise`;
    const updated = await tests.update(id, { type: "llm", name, ...REFUND_TEST });
    assert.equal(updated.id, id);
    assert.equal(updated.type, "llm");
    assert.equal(updated.name, name);
    assert.deepEqual(updated.successExamples, REFUND_TEST.successExamples);
    assert.deepEqual(updated.failureExamples, REFUND_TEST.failureExamples);

    const got = await tests.get(id);
    assert.equal(got.name, name);
    assert.equal(got.successCondition, undefined, "PUT replaces the test: the dropped successCondition must be gone");
    assert.equal(got.chatHistory.length, 2);
    assert.deepEqual(
      got.chatHistory.map((m) => [m.role, m.message, m.timeInCallSecs]),
      REFUND_TEST.chatHistory.map((m) => [m.role, m.message, m.timeInCallSecs]),
    );
    assert.deepEqual(got.successExamples, REFUND_TEST.successExamples);
    assert.equal(before.name, `${prefix} refund draft`);
  });

  it("a test's latency_budget (an extension) goes through additionalBodyParameters and comes back from tests.get", { timeout: TEST_TIMEOUT_MS }, async () => {
    // The SDK's request shapes do not know the field and strip it; its
    // answers pass unknown fields through, as sent (snake_case).
    const budget = { first_token_p95_ms: 800, turn_p95_ms: 2500 };
    const { id } = await tests.create(
      { type: "llm", name: uniqueName("e2e-budget"), ...GREETING_TEST },
      { additionalBodyParameters: { latency_budget: budget } },
    );
    try {
      const got = await tests.get(id);
      assert.deepEqual(got.latency_budget, budget);
      assert.equal(got.successCondition, GREETING_TEST.successCondition);
      const err = await expectStatus(
        strict.conversationalAi.tests.update(
          id,
          { type: "llm", name: "over budget", ...GREETING_TEST },
          { additionalBodyParameters: { latency_budget: { first_token_p95_ms: 600_001 } } },
        ),
        422,
      );
      assert.deepEqual(err.body.detail[0].loc, ["body", "latency_budget", "first_token_p95_ms"]);
    } finally {
      await tests.delete(id);
    }
  });

  it("tests.list pages with pageSize 1 and the cursor, and filters by search and type", { timeout: 2 * TEST_TIMEOUT_MS }, async () => {
    const want = new Set([need(ids.greeting, "greeting test"), need(ids.tool, "tool test"), need(ids.refund, "refund test")]);
    const seen = new Map();
    let cursor;
    for (let pages = 1; ; pages++) {
      assert.ok(pages <= MAX_PAGES, `still hasMore after ${MAX_PAGES} pages`);
      const page = await tests.list({ search: prefix, pageSize: 1, cursor });
      assert.ok(page.tests.length <= 1, `pageSize 1 returned ${page.tests.length} tests`);
      for (const t of page.tests) {
        assert.ok(!seen.has(t.id), `test ${t.id} returned on two pages`);
        seen.set(t.id, t);
      }
      if (!page.hasMore) break;
      assert.equal(page.tests.length, 1, "a page with hasMore must not be empty");
      assertNonEmptyString(page.nextCursor, "nextCursor of a page with hasMore");
      assert.notEqual(page.nextCursor, cursor, "nextCursor did not advance");
      cursor = page.nextCursor;
    }
    assert.deepEqual(new Set(seen.keys()), want, "search by the shared prefix must page through exactly our tests");
    for (const [id, s] of seen) {
      assertSummary(s, `tests.list ${id}`);
      assert.ok(s.name.startsWith(prefix), s.name);
    }
    assert.equal(seen.get(ids.tool).type, "tool");
    assert.equal(seen.get(ids.greeting).type, "llm");
    assert.equal(seen.get(ids.greeting).conversationInitiationSource, "js_sdk");
    assert.equal(seen.get(ids.refund).name, `${prefix} refund promise`);

    // Search is case-insensitive and by name; types narrows.
    const one = await tests.list({ search: `${prefix} GREETING`.toUpperCase() });
    assert.deepEqual(one.tests.map((t) => t.id), [ids.greeting]);
    assert.equal(one.hasMore, false);
    const tools = await tests.list({ search: prefix, types: "tool" });
    assert.deepEqual(tools.tests.map((t) => t.id), [ids.tool]);
    const none = await tests.list({ search: uniqueName("e2e-no-such-test") });
    assert.deepEqual(none.tests, []);
    assert.equal(none.hasMore, false);
    // sharingMode: every entry is shared within the workspace; "shared_with_me" leaves out the caller's own.
    const all = await tests.list({ search: prefix, sharingMode: "all" });
    assert.deepEqual(new Set(all.tests.map((t) => t.id)), want);
    const shared = await tests.list({ search: prefix, sharingMode: "shared_with_me" });
    assert.deepEqual(shared.tests, [], "the caller's own tests are not shared with it");
    await expectStatus(strict.conversationalAi.tests.list({ pageSize: 101 }), 422);
  });

  it("tests.summaries returns each test by id; an unknown id is a 422", { timeout: TEST_TIMEOUT_MS }, async () => {
    const wanted = [need(ids.greeting, "greeting test"), need(ids.tool, "tool test")];
    const { tests: byId } = await tests.summaries({ testIds: wanted });
    assert.deepEqual(Object.keys(byId).sort(), [...wanted].sort());
    assertSummary(byId[ids.greeting], "summaries[greeting]");
    assert.equal(byId[ids.greeting].name, `${prefix} greeting`);
    assert.equal(byId[ids.greeting].type, "llm");
    assert.equal(byId[ids.tool].type, "tool");

    const missing = `test_e2e_missing_${randomBytes(8).toString("hex")}`;
    const err = await expectStatus(strict.conversationalAi.tests.summaries({ testIds: [ids.greeting, missing] }), 422);
    assert.ok(
      err.body.detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(["body", "test_ids", 1])),
      `422 body does not point at test_ids[1]: ${JSON.stringify(err.body)}`,
    );
  });

  it("tests.folders: create, get, update, list inside, delete (force for a non-empty one)", { timeout: TEST_TIMEOUT_MS }, async () => {
    const folders = tests.folders;
    const folder = await folders.create({ name: `${prefix} folder` });
    assertNonEmptyString(folder.id, "folder id");
    assert.equal(folder.name, `${prefix} folder`);
    const sub = await folders.create({ name: `${prefix} sub`, parentFolderId: folder.id });

    const { id: inside } = await tests.create({
      type: "llm",
      name: `${prefix} in folder`,
      parentFolderId: sub.id,
      chatHistory: [{ role: "user", message: "What are your opening hours?", timeInCallSecs: 1 }],
      successCondition: "The agent states the opening hours nine to five",
    });

    const got = await folders.get(folder.id);
    assert.equal(got.id, folder.id);
    assert.equal(got.name, `${prefix} folder`);
    assert.equal(got.childrenCount, 1);
    const subGot = await folders.get(sub.id);
    assert.deepEqual(subGot.folderPath?.map((s) => s.id), [folder.id, sub.id]);
    assert.equal(subGot.childrenCount, 1);

    const renamed = await folders.update(folder.id, { name: `${prefix} renamed folder` });
    assert.equal(renamed.id, folder.id);
    assert.equal(renamed.name, `${prefix} renamed folder`);

    // Listing one folder's children; folders appear when asked for.
    const inSub = await tests.list({ parentFolderId: sub.id });
    assert.deepEqual(inSub.tests.map((t) => t.id), [inside]);
    assert.deepEqual(inSub.tests[0].folderPath?.map((s) => s.name), [`${prefix} renamed folder`, `${prefix} sub`]);
    const inTop = await tests.list({ parentFolderId: folder.id, types: ["folder", "llm"] });
    assert.deepEqual(inTop.tests.map((t) => [t.id, t.type]), [[sub.id, "folder"]]);
    assert.equal(inTop.tests[0].entityType, "folder");
    assert.equal(inTop.tests[0].childrenCount, 1);

    // tests.move moves a test into another folder, and without moveTo to
    // the root, as the listings then show.
    const moved = await tests.move({ entityIds: [inside], moveTo: folder.id });
    assert.equal(moved.moved_count, 1, "the SDK leaves this response untyped");
    const listed = async (parentFolderId) => (await tests.list({ parentFolderId, search: prefix })).tests.map((t) => t.id);
    assert.ok((await listed(folder.id)).includes(inside), "the moved test is in its new folder");
    assert.ok(!(await listed(sub.id)).includes(inside), "the moved test left its folder");
    await tests.move({ entityIds: [inside] });
    assert.ok((await listed(undefined)).includes(inside), "moved without moveTo, the test is at the root");
    await tests.move({ entityIds: [inside], moveTo: sub.id });
    assert.deepEqual(await listed(sub.id), [inside]);

    // A non-empty folder needs force; force deletes what it holds.
    await expectStatus(strict.conversationalAi.tests.folders.delete(folder.id), 409);
    await folders.delete(folder.id, { force: true });
    await expectStatus(strict.conversationalAi.tests.folders.get(folder.id), 404);
    await expectStatus(strict.conversationalAi.tests.folders.get(sub.id), 404);
    await expectStatus(strict.conversationalAi.tests.get(inside), 404);
  });

  it("agents.runTests returns an invocation with every run pending", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = need(agentId, "agent");
    // Optionals left undefined, as a caller passing its own options on
    // does: the SDK sends them as null, which means absent.
    const inv = await client.conversationalAi.agents.runTests(agent, {
      tests: [
        { testId: need(ids.greeting, "greeting test"), workflowNodeId: undefined },
        { testId: need(ids.refund, "refund test") },
        { testId: need(ids.tool, "tool test"), workflowNodeId: "node_e2e" },
      ],
      branchId: undefined,
      repeatCount: undefined,
    });
    assertNonEmptyString(inv.id, "invocation id");
    firstInvocation = inv.id;
    assert.equal(inv.agentId, agent);
    assert.equal(inv.repeatCount, 1);
    assert.equal(inv.bucketingStatus, undefined, "no bucketing when repeatCount is 1");
    assert.equal(inv.cancelled, false);
    assertRecentUnixSecs(inv.createdAt, "createdAt");
    assert.equal(inv.testRuns.length, 3);
    assert.deepEqual(inv.testRuns.map((r) => r.testId).sort(), [ids.greeting, ids.refund, ids.tool].sort());
    inv.testRuns.forEach((r, i) => {
      assertRun(r, inv, `testRuns[${i}]`);
      assert.equal(r.status, "pending", `a new run is ${r.status}`);
    });
    const byTest = runsByTest(inv);
    assert.equal(byTest.get(ids.tool)[0].workflowNodeId, "node_e2e");
    assert.equal(byTest.get(ids.tool)[0].metadata.testType, "tool_call");
    assert.equal(byTest.get(ids.greeting)[0].metadata.testType, "llm");
    assert.equal(byTest.get(ids.greeting)[0].testName, `${prefix} greeting`);
  });

  it("tests.invocations.get: every run finishes with the outcome the offline model gives", { timeout: TEST_TIMEOUT_MS }, async () => {
    const inv = await untilRunsFinish(client, need(firstInvocation, "invocation"));
    assert.equal(inv.id, firstInvocation);
    inv.testRuns.forEach((r, i) => assertRun(r, inv, `testRuns[${i}]`));
    const byTest = runsByTest(inv);

    // The llm test passes: the test's dynamic variable reached the prompt.
    const [greeting] = byTest.get(ids.greeting);
    assert.equal(greeting.status, "passed", JSON.stringify(greeting.conditionResult));
    assert.equal(greeting.conditionResult.result, "success");
    assertNonEmptyString(greeting.conditionResult.rationale?.summary, "greeting rationale.summary");
    assert.ok(greeting.conditionResult.rationale.messages.length >= 1, "greeting rationale.messages");
    assert.equal(greeting.agentResponses.length, 1);
    assert.equal(greeting.agentResponses[0].role, "agent");
    assert.equal(greeting.agentResponses[0].message, GREETING_REPLY);
    assert.equal(greeting.agentResponses[0].agentMetadata?.agentId, agentId);
    assert.deepEqual(greeting.agentResponses[0].toolCalls ?? [], []);
    const info = greeting.testInfo;
    assert.equal(info.type, "llm");
    assert.deepEqual(info.dynamicVariables, { customer: "Ada Lovelace" });
    assert.equal(info.chatHistory[0].message, "Who do you help?");
    assert.equal(info.successCondition, GREETING_TEST.successCondition);
    assert.deepEqual(info.successExamples, GREETING_TEST.successExamples);
    assert.deepEqual(info.failureExamples, GREETING_TEST.failureExamples);
    assert.equal(info.conversationInitiationSource, "js_sdk");
    assertRecentUnixSecs(greeting.lastUpdatedAtUnix, "lastUpdatedAtUnix of a finished run");

    // The refund test fails: the reply is its failure example.
    const [refund] = byTest.get(ids.refund);
    assert.equal(refund.status, "failed", JSON.stringify(refund.conditionResult));
    assert.equal(refund.conditionResult.result, "failure");
    assertNonEmptyString(refund.conditionResult.rationale?.summary, "refund rationale.summary");
    assert.equal(refund.agentResponses[0].message, REFUND_REPLY);
    assert.equal(refund.testName, `${prefix} refund promise`);
    assert.deepEqual(refund.testInfo.chatHistory.map((m) => m.role), ["agent", "user"]);

    // The tool test passes: book_table called with guests 4, date friday.
    const [tool] = byTest.get(ids.tool);
    assert.equal(tool.status, "passed", JSON.stringify(tool.conditionResult));
    assert.equal(tool.conditionResult.result, "success");
    assert.equal(tool.testInfo.type, "tool");
    assert.deepEqual(tool.testInfo.toolCallParameters?.referencedTool, { id: "book_table", type: "client" });
    assert.equal(tool.workflowNodeId, "node_e2e");
    const calls = tool.agentResponses[0].toolCalls;
    assert.equal(calls.length, 1, JSON.stringify(calls));
    assert.equal(calls[0].toolName, "book_table");
    assert.equal(calls[0].toolHasBeenCalled, true);
    assert.deepEqual(JSON.parse(calls[0].paramsAsJson), { guests: 4, date: "friday" });
    assert.equal(tool.metadata.testType, "tool_call");
  });

  it("agents.runTests with repeatCount 2 buckets the runs of each test", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = need(agentId, "agent");
    const created = await client.conversationalAi.agents.runTests(agent, {
      tests: [{ testId: need(ids.greeting, "greeting test") }, { testId: need(ids.refund, "refund test") }],
      repeatCount: 2,
    });
    repeatedInvocation = created.id;
    assert.equal(created.repeatCount, 2);
    assert.equal(created.bucketingStatus, "pending");
    assert.equal(created.testRuns.length, 4);
    assert.ok(created.testRuns.every((r) => r.status === "pending"));
    // Until its runs have finished, each test's runs share one pending bucket.
    assert.equal(created.resultGroups.length, 2);
    for (const [i, g] of created.resultGroups.entries()) {
      assert.equal(g.buckets.length, 1, JSON.stringify(g.buckets));
      const [b] = g.buckets;
      assert.equal(b.status, "pending");
      assertNonEmptyString(b.title, "pending bucket title");
      assert.deepEqual(b.testRunIds, created.testRuns.slice(2 * i, 2 * i + 2).map((r) => r.testRunId));
    }

    const inv = await poll(
      `bucketing of ${created.id} completes`,
      () => client.conversationalAi.tests.invocations.get(created.id),
      (i) => i.bucketingStatus !== "pending",
    );
    assert.equal(inv.bucketingStatus, "completed");
    assert.ok(finished(inv), "bucketing completed while runs are pending");
    const byTest = runsByTest(inv);
    assert.equal(inv.resultGroups.length, 2);
    const want = { [ids.greeting]: "passed", [ids.refund]: "failed" };
    for (const g of inv.resultGroups) {
      assert.ok(g.testId in want, `result group for unexpected test ${g.testId}`);
      assertNonEmptyString(g.testName, "resultGroups[].testName");
      // The offline model is deterministic: both runs share one bucket.
      assert.equal(g.buckets.length, 1, JSON.stringify(g.buckets));
      const [b] = g.buckets;
      assert.equal(b.status, want[g.testId]);
      assertNonEmptyString(b.title, "bucket title");
      assertNonEmptyString(b.reason, "bucket reason");
      assert.deepEqual([...b.testRunIds].sort(), byTest.get(g.testId).map((r) => r.testRunId).sort());
      assert.ok(byTest.get(g.testId).every((r) => r.status === want[g.testId]));
    }
  });

  it("tests.invocations.list finds both invocations with their counts, paging with pageSize 1", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = need(agentId, "agent");
    const first = need(firstInvocation, "first invocation");
    const repeated = need(repeatedInvocation, "repeated invocation");
    // The listing is a read model: wait until it shows both finished.
    const all = await poll(
      "invocations.list shows both invocations finished",
      () => client.conversationalAi.tests.invocations.list({ agentId: agent }),
      (p) => p.results.length === 2 && p.results.every((r) => r.pendingCount === 0),
    );
    assert.equal(all.hasMore, false);
    assert.deepEqual(all.results.map((r) => r.id), [repeated, first], "newest first");
    const [rep, one] = all.results;
    assert.equal(one.agentId, agent);
    assert.equal(one.testRunCount, 3);
    assert.equal(one.passedCount, 2);
    assert.equal(one.failedCount, 1);
    assert.equal(one.pendingCount, 0);
    assert.equal(one.cancelledCount, 0);
    assert.equal(one.title, "3 tests");
    assert.equal(one.repeatCount, 1);
    assertRecentUnixSecs(one.createdAtUnixSecs, "createdAtUnixSecs");
    assert.equal(rep.testRunCount, 4);
    assert.equal(rep.passedCount, 2);
    assert.equal(rep.failedCount, 2);
    assert.equal(rep.repeatCount, 2);

    const page1 = await client.conversationalAi.tests.invocations.list({ agentId: agent, pageSize: 1 });
    assert.deepEqual(page1.results.map((r) => r.id), [repeated]);
    assert.equal(page1.hasMore, true);
    assertNonEmptyString(page1.nextCursor, "nextCursor");
    const page2 = await client.conversationalAi.tests.invocations.list({ agentId: agent, pageSize: 1, cursor: page1.nextCursor });
    assert.deepEqual(page2.results.map((r) => r.id), [first]);
    assert.equal(page2.hasMore, false);

    const withTool = await client.conversationalAi.tests.invocations.list({ agentId: agent, testId: ids.tool });
    assert.deepEqual(withTool.results.map((r) => r.id), [first], "only the first invocation ran the tool test");
  });

  it("agents.runTests with agentConfigOverride runs against the override, not the agent", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = need(agentId, "agent");
    // The override has no tool: the tool test must now fail.
    const created = await client.conversationalAi.agents.runTests(agent, {
      tests: [{ testId: need(ids.tool, "tool test") }],
      agentConfigOverride: {
        conversationConfig: { agent: { prompt: { prompt: "You only answer questions about our opening hours." } } },
        platformSettings: {},
      },
    });
    assert.equal(created.testRuns.length, 1);
    assert.equal(created.testRuns[0].status, "pending");
    const inv = await untilRunsFinish(client, created.id);
    const [run] = inv.testRuns;
    assert.equal(run.status, "failed", JSON.stringify(run.conditionResult));
    assert.equal(run.conditionResult.result, "failure");
    assert.match(run.conditionResult.rationale.summary, /book_table/);
    assert.deepEqual(run.agentResponses[0].toolCalls ?? [], [], "the override has no tool to call");
  });

  it("tests.invocations.resubmit runs a finished run again", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = need(firstInvocation, "invocation");
    const before = await untilRunsFinish(client, id);
    const refund = before.testRuns.find((r) => r.testId === ids.refund);
    // Resubmitting needs the invocation complete, which follows its last
    // run shortly: 409 until then.
    const resubmitted = await poll(
      `resubmit of ${refund.testRunId} is accepted`,
      async () => {
        try {
          return await strict.conversationalAi.tests.invocations.resubmit(id, { testRunIds: [refund.testRunId], agentId });
        } catch (err) {
          if (err instanceof ElevenLabsError && err.statusCode === 409) return undefined;
          throw err;
        }
      },
      (r) => r !== undefined,
    );
    // The SDK leaves this response untyped.
    assert.equal(resubmitted.id, id);
    assert.deepEqual(resubmitted.test_run_ids, [refund.testRunId]);

    const after = await poll(
      "the resubmitted run finishes its second attempt",
      () => client.conversationalAi.tests.invocations.get(id),
      // attempt: this platform's addition to a finished run (kept by the
      // SDK, which passes unknown keys through).
      (inv) => finished(inv) && inv.testRuns.find((r) => r.testRunId === refund.testRunId).attempt === 2,
    );
    const again = after.testRuns.find((r) => r.testRunId === refund.testRunId);
    assert.equal(again.status, "failed");
    assert.equal(again.conditionResult.result, "failure");
    assert.equal(again.agentResponses[0].message, REFUND_REPLY);
    assert.equal(after.testRuns.length, 3, "resubmitting adds no run");
  });

  it("tests.invocations.cancel stops an invocation whose runs wait on the agent's endpoint", { timeout: TEST_TIMEOUT_MS }, async () => {
    // The agent's own endpoint (a custom LLM, as a team runs it) holds
    // every request it gets: the runs stay in flight until the cancel. The
    // stack must let agent endpoints reach 127.0.0.1, as webhooks do.
    const held = [];
    const endpoint = http.createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
    try {
      const { agentId: slow } = await client.conversationalAi.agents.create({
        name: `${prefix} held agent`,
        conversationConfig: {
          agent: { prompt: { prompt: PROMPT, llm: "custom-llm", customLlm: { url: `http://127.0.0.1:${endpoint.address().port}/v1`, modelId: "held-1" } } },
        },
      });
      const inv = await client.conversationalAi.agents.runTests(slow, {
        tests: [{ testId: need(ids.greeting, "greeting test") }],
        repeatCount: 3,
      });
      await poll("a run reached the agent's endpoint", async () => held.length, (n) => n > 0);
      await client.conversationalAi.tests.invocations.cancel(inv.id);
      const cancelled = await client.conversationalAi.tests.invocations.get(inv.id);
      assert.equal(cancelled.cancelled, true);
      assert.equal(cancelled.status, "cancelled");
      // Cancelling again changes nothing; a completed invocation is a 409
      // (status: this platform's addition, kept by the SDK). Completion
      // follows the last run shortly, and a resubmit reopens it.
      await client.conversationalAi.tests.invocations.cancel(inv.id);
      const done = need(firstInvocation, "invocation");
      await poll(`${done} completes`, () => client.conversationalAi.tests.invocations.get(done), (i) => i.status === "completed");
      await expectStatus(strict.conversationalAi.tests.invocations.cancel(done), 409);
    } finally {
      for (const res of held) res.destroy();
      endpoint.close();
    }
  });

  it("run-tests validation: repeatCount 51, no tests and an unknown test are 422; an unknown invocation is 404", { timeout: TEST_TIMEOUT_MS }, async () => {
    const agent = need(agentId, "agent");
    const run = (body) => strict.conversationalAi.agents.runTests(agent, body);
    const locOf = (err) => err.body.detail.map((d) => JSON.stringify(d.loc));

    const tooMany = await expectStatus(run({ tests: [{ testId: need(ids.greeting, "greeting test") }], repeatCount: 51 }), 422);
    assert.ok(locOf(tooMany).includes(JSON.stringify(["body", "repeat_count"])), JSON.stringify(tooMany.body));
    const empty = await expectStatus(run({ tests: [] }), 422);
    assert.ok(locOf(empty).includes(JSON.stringify(["body", "tests"])), JSON.stringify(empty.body));
    const unknown = await expectStatus(run({ tests: [{ testId: `test_e2e_missing_${randomBytes(8).toString("hex")}` }] }), 422);
    assert.ok(locOf(unknown).includes(JSON.stringify(["body", "tests", 0, "test_id"])), JSON.stringify(unknown.body));

    await expectStatus(
      strict.conversationalAi.tests.invocations.get(`tinv_e2e_missing_${randomBytes(8).toString("hex")}`),
      404,
    );
  });

  it("tests.delete removes a test; invocations that ran it still read", { timeout: TEST_TIMEOUT_MS }, async () => {
    const id = need(ids.refund, "refund test");
    await tests.delete(id);
    await expectStatus(strict.conversationalAi.tests.get(id), 404);
    const listed = await tests.list({ search: prefix });
    assert.ok(!listed.tests.some((t) => t.id === id), "a deleted test is still listed");
    const inv = await client.conversationalAi.tests.invocations.get(need(firstInvocation, "invocation"));
    const run = inv.testRuns.find((r) => r.testId === id);
    assert.equal(run.testName, `${prefix} refund promise`);
    assert.equal(run.testInfo.type, "llm");
  });
});
