#!/usr/bin/env bash
# Vendors the one browser library the web console uses: cytoscape.js, which
# draws the router network. The console has no build step and must work
# offline, so the minified file is checked into console/assets/vendor/ with
# its licence beside it. This script is how that file was made and how to
# remake it: it takes the package from the npm registry with `npm pack`,
# extracts dist/cytoscape.min.js and LICENSE, and refuses a file whose
# sha256 is not the one recorded below (a changed tarball, or a version
# bump that forgot to update the hash).
#
# Usage: scripts/console-vendor.sh
# To move to another version: change VERSION, run it, and put the sha256 it
# reports as SHA256 once you have looked at the new file.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=3.35.0
SHA256=71fa9ebec21a7ca2c40cff6aacc30d1f6464e363662ad4b2c197e1adc770cd94
DEST=console/assets/vendor

log() { echo "console-vendor: $*" >&2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

log "npm pack cytoscape@$VERSION"
(cd "$TMP" && npm pack --silent "cytoscape@$VERSION" >/dev/null)
TARBALL=$TMP/cytoscape-$VERSION.tgz
if [ ! -f "$TARBALL" ]; then
  log "npm pack made no $TARBALL"
  exit 1
fi
tar -xzf "$TARBALL" -C "$TMP" package/dist/cytoscape.min.js package/LICENSE

GOT=$(sha256sum "$TMP/package/dist/cytoscape.min.js" | cut -d' ' -f1)
if [ "$GOT" != "$SHA256" ]; then
  log "cytoscape.min.js sha256 is $GOT, want $SHA256"
  exit 1
fi

mkdir -p "$DEST"
cp "$TMP/package/dist/cytoscape.min.js" "$DEST/cytoscape.min.js"
cp "$TMP/package/LICENSE" "$DEST/cytoscape.LICENSE"
log "wrote $DEST/cytoscape.min.js (sha256 $GOT) and $DEST/cytoscape.LICENSE"
