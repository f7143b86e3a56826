#!/usr/bin/env bash
# Runs the SDK end-to-end tests against VOICEAI_BASE_URL with VOICEAI_API_KEY.
# Usage: VOICEAI_BASE_URL=http://127.0.0.1:8080 VOICEAI_API_KEY=<admin key> ./run.sh [test files...]
# Exits non-zero when a test fails.
set -euo pipefail
cd "$(dirname "$0")"

# Install the locked dependencies when node_modules is missing or older than
# the lock file (npm ci writes node_modules/.package-lock.json).
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi

if [[ -z "${VOICEAI_BASE_URL:-}" || -z "${VOICEAI_API_KEY:-}" ]]; then
  echo "run.sh: VOICEAI_BASE_URL and VOICEAI_API_KEY must both be set; the server tests will fail" >&2
fi

if [[ $# -eq 0 ]]; then
  set -- *.test.mjs
fi
# --test-force-exit: when a request fails before any response (server down),
# SDK 2.73.0 leaves its request-timeout timer running, which would keep each
# test process alive for the full timeout after its tests have finished.
exec node --test --test-force-exit --test-reporter=spec "$@"
