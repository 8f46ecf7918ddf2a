#!/usr/bin/env bash
# bedrock-protocol and jsp-raknet (npm, MIT / ISC) under target/bedrock-node,
# for scripts/bedrock_peers.js, scripts/bedrock-capture.sh and
# tests/bedrock.rs. Idempotent: does nothing when the pinned versions are
# there. Needs node and npm (the npm registry).
#
# Pinned (checked to work together, 1.16.201 to 1.26.60):
#   bedrock-protocol 3.59.0  (its CURRENT_VERSION is 1.26.45)
#   jsp-raknet       2.2.0   (pure JavaScript RakNet, protocol 10)
#   minecraft-data   3.119.0 (the packet schemas; bedrock-protocol asks ^3.0.0)
#   protodef         1.19.0  (the serializer; bedrock-protocol asks ^1.14.0)
#
# --ignore-scripts: no install script runs. bedrock-protocol depends on
# raknet-native (and optionally raknet-node), native addons whose install
# scripts download or compile a binary; without them the packages are there
# but cannot be loaded. bedrock_peers.js therefore routes bedrock-protocol's
# RakNet glue (src/rak.js) to jsp-raknet at load time; nothing in
# node_modules is changed (see the header of bedrock_peers.js).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/bedrock-node
pins=(bedrock-protocol@3.59.0 jsp-raknet@2.2.0 minecraft-data@3.119.0 protodef@1.19.0)
installed () {
  local p name version
  for p in "${pins[@]}"; do
    name=${p%@*}
    version=${p##*@}
    [ -e "$dir/node_modules/$name/package.json" ] || return 1
    [ "$(node -p "require('./$dir/node_modules/$name/package.json').version")" = "$version" ] || return 1
  done
}
if installed; then
  exit 0
fi
mkdir -p "$dir"
echo '{"name": "raknet-dissect-bedrock-peers", "private": true}' > "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --save-exact --no-audit --no-fund --loglevel=error "${pins[@]}")
installed || { echo "bedrock-setup: the pinned versions are not what npm installed under $dir" >&2; exit 1; }
