#!/usr/bin/env python3
"""Generate src/bedrock/schema.json.z: every Bedrock packet definition of
minecraft-data, by protocol number, for the schema decoder (bedrock/schema).

From the same pinned package as scripts/bedrock-names.py (minecraft-data
3.119.0, MIT: see src/bedrock/LICENSE-minecraft-data), every version from
1.16.201 on: the `types` of data/bedrock/<folder>/protocol.json. Each type's
definition is kept once across all versions (the 55 versions' 8.4 MB of
types hold about a thousand distinct definitions), each version is a table
from type name to definition, and the whole is zlib-compressed JSON:

    {"package": "minecraft-data 3.119.0",
     "defs": [DEFINITION, ...],                 # ProtoDef JSON, as in protocol.json
     "tables": [{"TYPE": DEF_INDEX, ...}, ...],
     "protocols": [[NUMBER, TABLE_INDEX], ...]} # ascending

A protocol number with several versions uses its newest version's folder,
as packet_names.txt does.

    python3 scripts/bedrock-schema.py          # (re)write the file
    python3 scripts/bedrock-schema.py --check  # exit 1 if the committed file is stale
"""

import argparse
import importlib.util
import json
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "src", "bedrock", "schema.json.z")

spec = importlib.util.spec_from_file_location("bedrock_names", os.path.join(HERE, "bedrock-names.py"))
names = importlib.util.module_from_spec(spec)
spec.loader.exec_module(names)


def generate():
    pkg = names.Package(names.tarball())
    data = names.DATA
    paths = pkg.json(data + "dataPaths.json")["bedrock"]
    number_of = {e["minecraftVersion"]: e["version"] for e in pkg.json(data + "bedrock/common/protocolVersions.json")}
    newest = {}
    for v, p in sorted(paths.items(), key=lambda kv: names.vkey(kv[0]) if kv[0][0].isdigit() else (0,)):
        if "protocol" not in p or not v[0].isdigit() or names.vkey(v) < names.FIRST:
            continue
        newest[number_of[v]] = p["protocol"]
    defs, index, tables, table_of = [], {}, [], {}
    protocols = []
    for n in sorted(newest):
        folder = newest[n]
        if folder not in table_of:
            types = pkg.json(f"{data}{folder}/protocol.json")["types"]
            table = {}
            for name in sorted(types):
                text = json.dumps(types[name], separators=(",", ":"), sort_keys=True)
                if text not in index:
                    index[text] = len(defs)
                    defs.append(types[name])
                table[name] = index[text]
            table_of[folder] = len(tables)
            tables.append(table)
        protocols.append([n, table_of[folder]])
    doc = {
        "package": f"{names.PACKAGE} {names.VERSION}",
        "defs": defs,
        "tables": tables,
        "protocols": protocols,
    }
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    return text, (len(protocols), len(tables), len(defs), len(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = ap.parse_args()
    text, (np, nt, nd, size) = generate()
    if args.check:
        try:
            with open(OUT, "rb") as f:
                old = zlib.decompress(f.read())
        except OSError:
            old = b""
        if old != text:
            sys.exit(f"{OUT} is stale: run python3 scripts/bedrock-schema.py")
        print(f"{OUT}: up to date")
        return
    packed = zlib.compress(text, 9)
    with open(OUT, "wb") as f:
        f.write(packed)
    print(f"{OUT}: {np} protocols, {nt} tables, {nd} distinct definitions, {size} bytes of JSON, {len(packed)} compressed")


if __name__ == "__main__":
    main()
