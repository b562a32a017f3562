"""Reads a binary export with ncdu-reader and the JSON export of the same tree with the
json module, and compares them entry by entry: path, kind, apparent size, disk usage,
and for hard links inode and link count. Prints the root's cumulative sizes and item
count, then every difference; exits 1 if there is one. Usage: compare.py BIN JSON"""
import json
import sys

from ncdu_reader import ncdu


def from_binary(path):
    root = ncdu.parse_ncdu(path)
    out = {}
    stack = [(root, b"")]
    while stack:
        d, prefix = stack.pop()
        for c in d.children or []:
            p = prefix + b"/" + c.name.encode("latin-1")
            name = type(c).__name__
            ino = getattr(c, "ino", 0)
            if isinstance(c, ncdu.Directory):
                kind = "dir"
                stack.append((c, p))
            elif ino:
                # ncdu-reader 1.0.0 reads type 3 (hard link) as a non-regular file; its
                # inode says which it was.
                kind = "link %d %d" % (ino, c.nlink)
            else:
                kind = {
                    "File": "file",
                    "NonRegularFile": "other",
                    "ExcludedByPattern": "excluded pattern",
                    "ExcludedWithX": "excluded otherfs",
                    "ExcludedWithKernFS": "excluded kernfs",
                    "ErrorWhileReadingEntry": "error",
                }[name]
            out[p] = (kind, getattr(c, "asize", 0), getattr(c, "dsize", 0))
    return root, out


def from_json(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        doc = json.load(f)
    out = {}
    stack = [(doc[3], b"")]
    while stack:
        d, prefix = stack.pop()
        for c in d[1:]:
            info = c[0] if isinstance(c, list) else c
            p = prefix + b"/" + info["name"].encode("utf-8", "surrogateescape")
            if "excluded" in info:
                kind = "excluded " + info["excluded"]
            elif isinstance(c, list):
                kind = "dir"
                stack.append((c, p))
            elif info.get("read_error"):
                kind = "error"
            elif info.get("hlnkc"):
                kind = "link %d %d" % (info["ino"], info["nlink"])
            elif info.get("notreg"):
                kind = "other"
            else:
                kind = "file"
            out[p] = (kind, info.get("asize", 0), info.get("dsize", 0))
    return out


root, binary = from_binary(sys.argv[1])
plain = from_json(sys.argv[2])
print("root", root.cumdsize, root.cumasize, root.items, len(binary))
bad = 0
for p in sorted(set(binary) | set(plain)):
    if binary.get(p) != plain.get(p):
        bad += 1
        if bad <= 20:
            print("differs", p, binary.get(p), plain.get(p))
sys.exit(1 if bad else 0)
