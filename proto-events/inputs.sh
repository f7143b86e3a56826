#!/usr/bin/env bash
# Prints one digest of everything generate.sh's output depends on and of
# that output: the .proto files, gen/, the buf configuration, the pinned
# tools and the script itself. generate.sh records it in gen.sha256;
# check-generated.sh compares it to skip building the tools when nothing
# changed since the last generation (a cold build of buf takes minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if command -v sha256sum >/dev/null; then sum() { sha256sum "$@"; } else sum() { shasum -a 256 "$@"; }; fi
{
  find proto gen -type f | LC_ALL=C sort
  printf '%s\n' buf.yaml buf.gen.yaml tools/go.mod tools/go.sum generate.sh inputs.sh
} | while IFS= read -r f; do sum "$f"; done | sum | cut -d' ' -f1
