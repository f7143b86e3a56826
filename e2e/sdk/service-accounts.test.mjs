// Service accounts and their API keys through the official SDK, and what a
// key's permissions and state allow. Tests in this file run in order and
// share the account and key created by the first ones.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  TEST_TIMEOUT_MS,
  adminClient,
  assertNonEmptyString,
  clientFor,
  expectStatus,
  uniqueName,
} from "./helpers.mjs";

const opts = { timeout: TEST_TIMEOUT_MS };

describe("service accounts and API keys", () => {
  const accountName = uniqueName("e2e-sa");
  const keyName = uniqueName("e2e-key");
  let accountId;
  let key; // { xiApiKey, keyId }

  const account = () => {
    assert.ok(accountId, "no service account: the create test failed");
    return accountId;
  };
  const createdKey = () => {
    assert.ok(key, "no API key: the key create test failed");
    return key;
  };
  const listKeys = async () => (await adminClient().serviceAccounts.apiKeys.list(account())).apiKeys;

  it("serviceAccounts.create returns the new account's id", opts, async () => {
    const res = await adminClient().serviceAccounts.create({ name: accountName });
    assertNonEmptyString(res.serviceAccountUserId, "serviceAccountUserId");
    accountId = res.serviceAccountUserId;
  });

  it("serviceAccounts.list contains the account", opts, async () => {
    const id = account();
    const { serviceAccounts } = await adminClient().serviceAccounts.list();
    const sa = serviceAccounts.find((s) => s.serviceAccountUserId === id);
    assert.ok(sa, `account ${id} not in ${JSON.stringify(serviceAccounts.map((s) => s.serviceAccountUserId))}`);
    assert.equal(sa.name, accountName);
    assert.deepEqual(sa.apiKeys, [], "a new account has no keys");
  });

  it("serviceAccounts.apiKeys.create returns the secret and key id", opts, async () => {
    const res = await adminClient().serviceAccounts.apiKeys.create(account(), {
      name: keyName,
      permissions: ["convai_read"],
    });
    assertNonEmptyString(res.xiApiKey, "xi-api-key");
    assertNonEmptyString(res.keyId, "key_id");
    assert.notEqual(res.xiApiKey, res.keyId, "the key id must not be the secret");
    key = res;
  });

  it("serviceAccounts.apiKeys.list contains the key without its secret", opts, async () => {
    const { xiApiKey, keyId } = createdKey();
    const keys = await listKeys();
    const k = keys.find((x) => x.keyId === keyId);
    assert.ok(k, `key ${keyId} not in ${JSON.stringify(keys.map((x) => x.keyId))}`);
    assert.equal(k.name, keyName);
    assert.equal(k.serviceAccountUserId, account());
    assert.notEqual(k.isDisabled, true, "a new key is enabled");
    if (k.permissions !== undefined) assert.deepEqual(k.permissions, ["convai_read"]);
    assert.ok(!JSON.stringify(keys).includes(xiApiKey), "the list exposes the secret");
    assert.equal(typeof k.hint, "string");
    assert.ok(k.hint.length < xiApiKey.length, `hint ${JSON.stringify(k.hint)} is as long as the secret`);
  });

  it("the read-only key can list agents but gets 403 on agents.create", opts, async () => {
    const readOnly = clientFor(createdKey().xiApiKey, { maxRetries: 0 });
    const page = await readOnly.conversationalAi.agents.list({ pageSize: 1 });
    assert.ok(Array.isArray(page.agents));
    await expectStatus(
      readOnly.conversationalAi.agents.create({
        name: uniqueName("e2e-forbidden"),
        conversationConfig: { agent: { firstMessage: "Hi", prompt: { prompt: "You are a helpful agent" } } },
      }),
      403,
    );
  });

  it("serviceAccounts.apiKeys.update disables and renames the key", opts, async () => {
    const { xiApiKey, keyId } = createdKey();
    await adminClient().serviceAccounts.apiKeys.update(account(), keyId, { isEnabled: false, name: "x" });
    const k = (await listKeys()).find((x) => x.keyId === keyId);
    assert.ok(k, `key ${keyId} gone after update`);
    assert.equal(k.name, "x");
    assert.equal(k.isDisabled, true);
    // A disabled key is rejected like an unknown one (spec section 5).
    await expectStatus(clientFor(xiApiKey, { maxRetries: 0 }).conversationalAi.agents.list({ pageSize: 1 }), 401);
  });

  it("serviceAccounts.apiKeys.delete removes the key", opts, async () => {
    const { xiApiKey, keyId } = createdKey();
    await adminClient().serviceAccounts.apiKeys.delete(account(), keyId);
    const keys = await listKeys();
    assert.ok(!keys.some((x) => x.keyId === keyId), `key ${keyId} still listed after delete`);
    await expectStatus(clientFor(xiApiKey, { maxRetries: 0 }).conversationalAi.agents.list({ pageSize: 1 }), 401);
  });
});
