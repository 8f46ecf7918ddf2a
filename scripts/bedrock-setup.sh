#!/usr/bin/env bash
# bedrock-protocol and jsp-raknet (npm, MIT) under target/bedrock-node, for
# scripts/bedrock_peers.js and tests/bedrock.rs. Idempotent. Scripts are not
# run (--ignore-scripts): the native RakNet backend would need the network
# to build, and bedrock_peers.js routes bedrock-protocol to jsp-raknet.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/bedrock-node
if [ -e "$dir/node_modules/bedrock-protocol/package.json" ] && [ -e "$dir/node_modules/jsp-raknet/package.json" ]; then
  exit 0
fi
mkdir -p "$dir"
echo '{"name": "raknet-dissect-bedrock-peers", "private": true}' > "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  bedrock-protocol@3.59.0 jsp-raknet@2.2.0)
