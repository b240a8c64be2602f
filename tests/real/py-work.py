# tests/real/py-work.py - a small real workload for CPython (tests/bench-trace.sh
# traces the interpreter running it): JSON, regular expressions, sorting,
# classes, generators; about 0.1 s untraced.  Prints one checksum line.
# An argument changes the number of items (default 5000; the short mode of
# tests/bench-trace.sh gives 200).
import json
import re
import sys
import zlib


class Item:
    def __init__(self, i):
        self.key = "k%05d" % i
        self.value = (i * 2654435761) % 1000003

    def score(self):
        return self.value % 97 + len(self.key)


def items(n):
    for i in range(n):
        yield Item(i)


data = sorted(items(int(sys.argv[1]) if len(sys.argv) > 1 else 5000), key=lambda it: (it.score(), it.key))
doc = json.dumps([{"key": it.key, "value": it.value, "tags": [it.key[-1]] * 3} for it in data])
back = json.loads(doc)
words = re.findall(r'"k(\d+)"', doc)
total = sum(int(w) for w in words) + sum(d["value"] for d in back)
print(len(back), len(words), total, zlib.crc32(doc.encode()))
