#!/usr/bin/env bash
# Regenerates the Go code in gen/ from the .proto files in proto/.
#
#   ./generate.sh            lint, then replace gen/ with fresh output
#   ./generate.sh DIR        lint, then write the fresh output to DIR/ instead
#                            (used by check-generated.sh; gen/ is untouched)
#
# The tools are pinned in tools/go.mod (buf, protoc-gen-go) and run through
# the Go toolchain (`go tool -modfile=tools/go.mod ...`): nothing to install
# by hand, and the tool dependencies stay out of proto-events/go.mod. The
# output is deterministic: same inputs and pins, same bytes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
here="$(pwd -P)"

# -modfile cannot be combined with the repository's go.work.
export GOWORK=off
# Keep the pins exact: never let the toolchain switch itself or the tool
# module resolve anything not already recorded in tools/go.sum.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"

tool() { go tool -modfile=tools/go.mod "$@"; }

out="${1:-}"
work="$(mktemp -d "${TMPDIR:-/tmp}/proto-events-gen.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# buf finds plugins on PATH: put the pinned protoc-gen-go (a cached build,
# resolved by `go tool -n`) first.
mkdir -p "$work/bin"
ln -s "$(tool -n protoc-gen-go)" "$work/bin/protoc-gen-go"
export PATH="$work/bin:$PATH"

tool buf lint
tool buf generate --template buf.gen.yaml -o "$work/out"

# Byte-stable regardless of the caller's umask.
find "$work/out" -type d -exec chmod 0755 {} +
find "$work/out" -type f -exec chmod 0644 {} +

if [[ -n "$out" ]]; then
  mkdir -p "$out"
  rm -rf "${out:?}/gen"
  cp -R "$work/out/gen" "$out/gen"
else
  # Replace gen/ as a whole so files of deleted .proto files disappear too.
  rm -rf "$here/gen.new"
  cp -R "$work/out/gen" "$here/gen.new"
  rm -rf "$here/gen"
  mv "$here/gen.new" "$here/gen"
  ./inputs.sh > gen.sha256
  echo "generate.sh: regenerated $(find gen -name '*.pb.go' | wc -l | tr -d ' ') files under proto-events/gen/"
fi
