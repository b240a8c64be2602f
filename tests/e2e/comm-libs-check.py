#!/usr/bin/env python3
"""tests/e2e/comm-libs-check.py DB JSONL SPEC... - the send/recv events of
programs that communicate through a library the agent does not trace (stdio,
libcurl), as tests/e2e/comm-libs.sh states them.

Each SPEC is WRITER>READER[=BYTES]: programs named by the basename of their
executable (the session's processes table; a pid that exec'd takes its last
program).  The check holds when the writer's sends on pipe/tcp channels to
the reader total BYTES (when given, else the reader's received total), the
reader received as many bytes on those channels, and every one of the
reader's recvs on them is matched to a send of the writer whose byte range
holds the recv's first byte (offsets agree).  Prints one line per SPEC,
"ok ..." or "bad ...", and exits 1 if any is bad.
"""
import json
import os
import sqlite3
import sys


def main():
    db, jsonl, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    con = sqlite3.connect(db)
    prog = {}
    for pid, exe, _ in con.execute(
            "select pid, exe, start_ns from processes order by start_ns"):
        prog[pid] = os.path.basename(exe or "")
    sends, recvs = [], []
    with open(jsonl) as f:
        for line in f:
            e = json.loads(line)
            if e["kind"] in ("send", "recv") and \
                    e.get("chan", "").startswith(("pipe:", "tcp:")):
                (sends if e["kind"] == "send" else recvs).append(e)
    bad = 0
    for spec in specs:
        pair, _, want = spec.partition("=")
        w, r = pair.split(">")
        wp = {p for p, n in prog.items() if n == w}
        rp = {p for p, n in prog.items() if n == r}
        rv = [e for e in recvs if e["pid"] in rp]
        # the channels the reader's recvs came from the writer on
        chans = {e["chan"] for e in rv if e.get("match", {}).get("pid") in wp}
        sv = [e for e in sends if e["pid"] in wp and e["chan"] in chans]
        rv = [e for e in rv if e["chan"] in chans]
        by_key = {(e["pid"], e["tid"], e["ts_ns"]): e for e in sv}
        sent, got = sum(e["bytes"] for e in sv), sum(e["bytes"] for e in rv)
        unmatched = offs = 0
        for e in rv:
            m = e.get("match")
            s = by_key.get((m["pid"], m["tid"], m["ts_ns"])) if m else None
            if not s:
                unmatched += 1
            elif not (s["offset"] <= e["offset"] < s["offset"] + s["bytes"]):
                offs += 1
        want = int(want) if want else got
        ok = wp and rp and rv and sent == want and got == want and \
            not unmatched and not offs
        print("%s %s: %d sends of %d bytes, %d recvs of %d bytes (want %d), "
              "%d unmatched, %d offsets disagree"
              % ("ok" if ok else "bad", pair, len(sv), sent, len(rv), got,
                 want, unmatched, offs))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
