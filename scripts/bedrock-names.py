#!/usr/bin/env python3
"""Generate src/bedrock/packet_names.txt: Bedrock game packet names by protocol.

The names are those of the npm package `minecraft-data` (MIT; the names that
bedrock-protocol users know: `login`, `play_status`, `start_game`, ...), at the
version pinned below.  The build never needs the network: the generated file
is committed and `src/bedrock/names.rs` embeds it with `include_str!`.

Usage
-----
    python3 scripts/bedrock-names.py          # (re)write src/bedrock/packet_names.txt
    python3 scripts/bedrock-names.py --check  # exit 1 if the committed file is stale

The package tarball is fetched once with `npm pack` into
target/minecraft-data/ and checked against the pinned sha512 integrity; only
the few JSON files needed are read out of it (the unpacked package is about
500 MB).  Output is deterministic: the same package gives the same bytes.

What is read
------------
- data/dataPaths.json: `bedrock.<version>.protocol` -> folder `bedrock/<f>`
  (some versions share a sibling's folder, e.g. 1.19.63 -> 1.19.62).
- data/bedrock/common/protocolVersions.json: game version <-> protocol number
  (several versions can share one number).
- data/bedrock/<f>/protocol.json: `types.mcpe_packet`, whose `name` field is
  `["mapper", {"type": "varint", "mappings": {"1": "login", ...}}]`.

Every version from 1.16.201 on (the older 0.14/0.15 folders use a u8 header
and another naming scheme).

File format (see the header the script writes)
-----------------------------------------------
    protocol N V...   protocol number N is game version(s) V
    table N...        the packet table of protocols N...: the previous table
                      (empty before the first) with the changes listed below
    ID NAME           packet id ID (decimal) is now NAME
    ID -              packet id ID no longer exists
Tables are in ascending protocol order; identical neighbours share one
`table` line, so each block holds only what changed.
"""

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile

PACKAGE = "minecraft-data"
VERSION = "3.119.0"
INTEGRITY = (
    "sha512-RElo0o2RooEzpeQO+QEHzTmHVTgOdbbomGQYBmWIaU1pupEmAItQb+LpJyL2EDXm"
    "pKicOU4swtBVzwIWae5l5g=="
)
FIRST = (1, 16, 201)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "bedrock", "packet_names.txt")
CACHE = os.path.join(ROOT, "target", "minecraft-data")
DATA = "package/minecraft-data/data/"


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def tarball():
    path = os.path.join(CACHE, f"{PACKAGE}-{VERSION}.tgz")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(
            ["npm", "pack", "--loglevel=error", f"{PACKAGE}@{VERSION}", "--pack-destination", CACHE],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    with open(path, "rb") as f:
        got = "sha512-" + base64.b64encode(hashlib.sha512(f.read()).digest()).decode()
    if got != INTEGRITY:
        sys.exit(f"{path}: integrity {got}, expected {INTEGRITY}; delete it and re-run")
    return path


class Package:
    def __init__(self, path):
        self.tar = tarfile.open(path, "r:gz")

    def json(self, name):
        f = self.tar.extractfile(name)
        if f is None:
            sys.exit(f"{name}: not a file in the package")
        return json.loads(f.read())


def packet_table(pkg, folder):
    """id -> name from types.mcpe_packet's `name` mapper of one folder."""
    fields = pkg.json(f"{DATA}{folder}/protocol.json")["types"]["mcpe_packet"][1]
    (name,) = [f for f in fields if f["name"] == "name"]
    kind, opts = name["type"]
    if kind != "mapper" or opts["type"] != "varint":
        sys.exit(f"{folder}: mcpe_packet name is {kind}/{opts.get('type')}")
    table = {}
    for key, value in opts["mappings"].items():
        pid = int(key, 0)
        if pid in table or not 0 <= pid < 1024 or not value or " " in value:
            sys.exit(f"{folder}: bad mapping {key!r} -> {value!r}")
        table[pid] = value
    return table


def generate():
    pkg = Package(tarball())
    meta = pkg.json("package/package.json")
    if meta.get("license") != "MIT" or meta.get("version") != VERSION:
        sys.exit(f"package.json: license {meta.get('license')}, version {meta.get('version')}")
    paths = pkg.json(DATA + "dataPaths.json")["bedrock"]
    numbers = pkg.json(DATA + "bedrock/common/protocolVersions.json")
    number_of = {}
    for e in numbers:
        if e["minecraftVersion"] in number_of:
            sys.exit(f"protocolVersions.json: {e['minecraftVersion']} twice")
        number_of[e["minecraftVersion"]] = e["version"]

    # game version -> (protocol number, folder), every version from FIRST on.
    versions = {}
    for v, p in paths.items():
        if "protocol" not in p or vkey(v) < FIRST:
            continue
        if v not in number_of:
            sys.exit(f"dataPaths.json: {v} has no protocol number")
        versions[v] = (number_of[v], p["protocol"])
    folders = sorted({f for _, f in versions.values()}, key=lambda f: vkey(f.split("/")[1]))
    tables = {f: packet_table(pkg, f) for f in folders}

    # protocol number -> its game versions (all of protocolVersions.json's
    # names for it) and its table (the newest version's folder).
    protocols = {}
    for v in sorted(versions, key=vkey):
        n, f = versions[v]
        protocols.setdefault(n, []).append(f)
    names_of = {
        n: sorted([v for v, m in number_of.items() if m == n], key=vkey) for n in protocols
    }
    notes = []
    for n, fs in protocols.items():
        distinct = sorted({json.dumps(tables[f], sort_keys=True) for f in fs})
        if len(distinct) > 1:
            notes.append(
                f"# note: protocol {n}'s folders {' '.join(fs)} disagree; {fs[-1]} is used"
            )

    out = [
        "# Bedrock game packet names (id -> name) by protocol number.",
        f"# Generated by scripts/bedrock-names.py from the npm package {PACKAGE} {VERSION}",
        "# (MIT licence: see LICENSE-minecraft-data beside this file). Do not edit by",
        "# hand; regenerate with: python3 scripts/bedrock-names.py",
        "#",
        "# Read from the package: data/dataPaths.json (bedrock.<version>.protocol ->",
        "# folder), data/bedrock/common/protocolVersions.json (version <-> protocol",
        "# number), and the `name` mapper of types.mcpe_packet in each",
        "# data/bedrock/<folder>/protocol.json, for every version from 1.16.201 on.",
        "#",
        "# Lines (blank lines and lines starting with # are comments):",
        "#   protocol N V...  protocol number N is game version(s) V",
        "#   table N...       the packet table of protocols N...: the previous table",
        "#                    (empty before the first) with the changes below it",
        "#   ID NAME          packet id ID (decimal) is now NAME",
        "#   ID -             packet id ID no longer exists",
        "# Protocols ascend; protocols with the same table share one `table` line.",
        *notes,
        "",
    ]
    order = sorted(protocols)
    for n in order:
        out.append(f"protocol {n} {' '.join(names_of[n])}")

    # Group neighbouring protocols with equal tables, then write each group
    # as the changes from the group before it.
    groups = []
    for n in order:
        t = tables[protocols[n][-1]]
        if groups and groups[-1][1] == t:
            groups[-1][0].append(n)
        else:
            groups.append(([n], t))
    prev = {}
    for ns, t in groups:
        fs = sorted({f for n in ns for f in protocols[n]}, key=lambda f: vkey(f.split("/")[1]))
        out.append("")
        out.append(f"# from {', '.join(fs)}")
        out.append(f"table {' '.join(str(n) for n in ns)}")
        for pid in sorted(set(prev) | set(t)):
            if pid not in t:
                out.append(f"{pid} -")
            elif prev.get(pid) != t[pid]:
                out.append(f"{pid} {t[pid]}")
        prev = t
    text = "\n".join(out) + "\n"
    stats = (len(order), len(groups), len(folders))
    return text, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = ap.parse_args()
    text, (nprot, ntables, nfolders) = generate()
    summary = (
        f"{nprot} protocols, {ntables} distinct tables, {nfolders} folders, "
        f"{len(text.encode())} bytes"
    )
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{OUT} is stale: run python3 scripts/bedrock-names.py")
        print(f"up to date: {summary}")
        return
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT, ROOT)}: {summary}")


if __name__ == "__main__":
    main()
