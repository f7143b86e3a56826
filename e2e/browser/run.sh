#!/usr/bin/env bash
# Drives the console in a real browser against VOICEAI_BASE_URL, signing in
# with VOICEAI_API_KEY (an admin key). Chromium comes from the system
# (Debian's /usr/bin/chromium; VOICEAI_CHROMIUM names another); npm brings
# playwright-core and axe-core only, never a browser.
# Usage: VOICEAI_BASE_URL=http://127.0.0.1:8080 VOICEAI_API_KEY=<admin key> ./run.sh [script.mjs args…]
# Exits non-zero when a check fails, or when no Chromium can be had.
set -euo pipefail
cd "$(dirname "$0")"

export VOICEAI_CHROMIUM="${VOICEAI_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$VOICEAI_CHROMIUM" ]]; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "run.sh: no Chromium at $VOICEAI_CHROMIUM; installing Debian's" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q chromium >&2 || { apt-get update -q >&2 && apt-get install -y -q chromium >&2; } || true
  fi
  if [[ ! -x "$VOICEAI_CHROMIUM" ]]; then
    echo "run.sh: FAIL: no Chromium at $VOICEAI_CHROMIUM, and none could be installed (run as root with apt-get, or install Debian's chromium package)" >&2
    exit 1
  fi
fi

# Install the locked dependencies when node_modules is missing or older than
# the lock file (npm ci writes node_modules/.package-lock.json).
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund >&2
fi

if [[ -z "${VOICEAI_BASE_URL:-}" || -z "${VOICEAI_API_KEY:-}" ]]; then
  echo "run.sh: VOICEAI_BASE_URL and VOICEAI_API_KEY must both be set" >&2
  exit 2
fi

# With a script named (queuebench.mjs, for make bench), run that instead.
if [[ $# -gt 0 ]]; then
  exec node "$@"
fi
exec node --test --test-force-exit --test-concurrency=1 --test-reporter=spec console.test.mjs
