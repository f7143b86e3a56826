// Shared set-up for the end-to-end tests: configuration from the
// environment, SDK clients that authenticate the way this platform expects,
// and assertions on SDK errors.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";

export { ElevenLabsClient, ElevenLabsError };

// Per-test time limit. The SDK's own default request timeout is 240 s; the
// clients below use REQUEST_TIMEOUT_SECS so a stuck server fails a test
// instead of stalling the run.
export const TEST_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_SECS = 20;

/** The stack under test, from VOICEAI_BASE_URL and VOICEAI_API_KEY. */
export function settings() {
  const baseUrl = process.env.VOICEAI_BASE_URL?.trim();
  const apiKey = process.env.VOICEAI_API_KEY?.trim();
  const missing = [];
  if (!baseUrl) missing.push("VOICEAI_BASE_URL");
  if (!apiKey) missing.push("VOICEAI_API_KEY");
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(" and ")} not set: point the tests at a running stack, e.g. ` +
        "VOICEAI_BASE_URL=http://127.0.0.1:8080 VOICEAI_API_KEY=<admin key> ./run.sh",
    );
  }
  return { baseUrl: baseUrl.replace(/\/+$/, ""), apiKey };
}

/**
 * An SDK client for key, as a user makes one: the SDK sends the key as
 * xi-api-key, which this platform reads as it reads x-api-key.
 */
export function clientFor(key, options = {}) {
  const { baseUrl } = settings();
  return new ElevenLabsClient({
    apiKey: key,
    baseUrl,
    timeoutInSeconds: REQUEST_TIMEOUT_SECS,
    ...options,
  });
}

/** A client with the key from VOICEAI_API_KEY (an admin key). */
export function adminClient(options = {}) {
  return clientFor(settings().apiKey, options);
}

/** A unique, recognisable name for something a test creates. */
export function uniqueName(prefix) {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

/**
 * Awaits an SDK call that must fail with HTTP status and returns the
 * ElevenLabsError. Any other outcome fails with what actually happened.
 * Callers disable retries (maxRetries: 0) so 5xx/429 are not retried.
 */
export async function expectStatus(call, status) {
  let result;
  try {
    result = await call;
  } catch (err) {
    if (!(err instanceof ElevenLabsError) || err.statusCode === undefined) {
      throw new assert.AssertionError({
        message: `expected HTTP ${status}, got a non-HTTP error: ${err?.stack ?? err}`,
        actual: err,
        expected: status,
      });
    }
    assert.equal(
      err.statusCode,
      status,
      `expected HTTP ${status}, got ${err.statusCode}: ${JSON.stringify(err.body)}`,
    );
    return err;
  }
  assert.fail(`expected HTTP ${status}, the call succeeded with ${JSON.stringify(result)}`);
}

/** Asserts value is a non-empty string. */
export function assertNonEmptyString(value, what) {
  assert.equal(typeof value, "string", `${what} is ${JSON.stringify(value)}, want a string`);
  assert.ok(value.length > 0, `${what} is empty`);
}
