#!/usr/bin/env bash
# Fails when the contracts in proto/ break wire or JSON compatibility with
# the ones at a git ref (default: origin/main if it exists, else HEAD):
# a changed field number or type, a removed or renamed field or message, a
# reused number. Evolution must be additive (see README.md).
#
#   ./breaking.sh [REF]
#
# Skips (exit 0) when REF has no proto-events contracts yet.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
export GOWORK=off
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"

ref="${1:-}"
if [[ -z "$ref" ]]; then
  if git rev-parse -q --verify origin/main >/dev/null; then ref=origin/main; else ref=HEAD; fi
fi
prefix="$(git rev-parse --show-prefix)" # e.g. "proto-events/"
prefix="${prefix%/}"

if ! git cat-file -e "$ref:$prefix/buf.yaml" 2>/dev/null; then
  echo "breaking.sh: $ref has no $prefix/buf.yaml; nothing to compare against."
  exit 0
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/proto-events-breaking.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$(git rev-parse --show-toplevel)" && git archive "$ref" "$prefix/buf.yaml" "$prefix/proto") | tar -x -C "$tmp"

go tool -modfile=tools/go.mod buf breaking --against "$tmp/$prefix"
echo "breaking.sh: proto/ is compatible with $ref."
