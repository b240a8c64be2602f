#!/usr/bin/env python3
# tests/soak/text-diff.py [--count] PID [MAX] - where the executable text
# of PID in memory differs from its file.
#   --count   one line "N of M bytes differ"; status 1 if N > 0 or nothing
#             was compared (tests/lib.sh text_restored: every byte an agent
#             patched is back)
#   else      one line a run of differing bytes (address, file offset, the
#             symbol before it when nm reads one, memory bytes, file
#             bytes), at most MAX runs (default 12): tests/soak/soak.sh
#             when a case's `restored` check fails, so that the failure
#             names the sites left patched.
import os
import subprocess
import sys

args = sys.argv[1:]
count = args[:1] == ["--count"]
if count:
    args = args[1:]
pid = args[0]
most = int(args[1]) if len(args) > 1 else 12
try:
    exe = os.readlink(f"/proc/{pid}/exe")
except OSError as e:
    print(f"pid {pid}: {e.strerror}")
    sys.exit(1)
runs = []
diff = total = 0
base = None
with open(f"/proc/{pid}/maps") as m:
    for line in m:
        p = line.split()
        if len(p) >= 6 and p[5] == exe and int(p[2], 16) == 0:
            base = int(p[0].split("-")[0], 16)
            break
with open(f"/proc/{pid}/maps") as m, open(f"/proc/{pid}/mem", "rb") as mem, \
        open(exe, "rb") as f:
    for line in m:
        p = line.split()
        if len(p) < 6 or p[5] != exe or "x" not in p[1]:
            continue
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        off = int(p[2], 16)
        mem.seek(lo)
        a = mem.read(hi - lo)
        f.seek(off)
        b = f.read(hi - lo)
        i, n = 0, min(len(a), len(b))
        total += n
        d = sum(1 for x, y in zip(a[:n], b[:n]) if x != y)
        diff += d
        while d and not count and i < n:
            if a[i] == b[i]:
                i += 1
                continue
            j = i
            # one run: differing bytes at most 4 apart
            while j < n and (a[j] != b[j] or any(
                    a[k] != b[k] for k in range(j, min(j + 4, n)))):
                j += 1
            runs.append((lo + i, off + i, a[i:j], b[i:j]))
            i = j
if count:
    print(f"{diff} of {total} bytes differ")
    sys.exit(1 if diff or not total else 0)
syms = []
try:
    out = subprocess.run(["nm", "-n", "--defined-only", "-D", exe],
                         capture_output=True, text=True).stdout
    out += subprocess.run(["nm", "-n", "--defined-only", exe],
                          capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            syms.append((int(p[0], 16), p[2]))
    syms.sort()
except OSError:
    pass


def sym(addr):
    # nm prints link-time addresses: a PIE's, from the mapping at offset 0
    off = addr - (base or 0)
    best = None
    for a, s in syms:
        if a > off:
            break
        best = (a, s)
    return f"{best[1]}+{off - best[0]:#x}" if best else "?"


print(f"pid {pid}: {len(runs)} runs of differing bytes")
for addr, off, a, b in runs[:most]:
    print(f"  {addr:#x} (file {off:#x}, {sym(addr)}) {len(a)} bytes:"
          f" mem {a[:16].hex()} file {b[:16].hex()}")
