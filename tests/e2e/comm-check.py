#!/usr/bin/env python3
"""tests/e2e/comm-check.py - check the send/recv events of a replay --format=jsonl.

  comm-check.py JSONL [--report OUT] [--pids P,Q] [--from-zero] [--kinds K,..]
                [--late] [--open-end] [--covered] [--end PID:send|recv:N]...
                [--within]

Every recv (of the pids given, or of all) must carry chan, peer, bytes and a
match naming a send event that exists, with the same chan; for streams
(offset present) the send's [offset, offset+bytes) must hold the recv's
offset, for datagrams the byte counts must be equal.  --from-zero: each
stream direction's sends and recvs cover [0, total) without gap or
overlap.  --report OUT: OUT holds the fixture's "<role> sent|recv KIND N"
lines; role "server" is the process that forked, "client" its child,
"helper" the client's child; the
bytes of each role's events per kind must equal what it reported.
--kinds: the channel kinds that must appear.  --late (an attach in the
middle of streams): a recv whose offset lies before the first traced send of
its channel from another process need not be matched.  --open-end (a
session stopped while its processes went on talking): nor need a recv
whose offset lies at or past the end of the last traced send of its
channel from another process (sent after that sender's tracing ended).
--covered (a sender traced only for a while: a fork child whose agent
stopped when it entered a sandbox): only a recv whose first byte lies in
a traced send of its channel from another process must be matched.  --within: each stream recv lies wholly inside its send (the fixtures read
whole writes), but a thread's first traced send on a channel (a call in
flight at injection, perhaps cut short) may be continued by the next.
--end PID:KIND:N: the
stream events of kind KIND (send/recv) of PID end at absolute offset N (the
total the program reports): the offsets are the stream's own.  Prints one line per problem
(at most 20) and exits 1 if there was any.
"""
import collections
import json
import sys


def kind_of(e):
    c = e.get("chan", "")
    k = c.split(":", 1)[0]
    if k == "unix" and "offset" not in e:
        return "unixd"
    return k


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    report = pids = kinds = None
    from_zero = late = within = open_end = covered = False
    ends = []
    while args:
        a = args.pop(0)
        if a == "--report":
            report = args.pop(0)
        elif a == "--pids":
            pids = {int(x) for x in args.pop(0).split(",")}
        elif a == "--from-zero":
            from_zero = True
        elif a == "--within":
            within = True
        elif a == "--late":
            late = True
        elif a == "--open-end":
            open_end = True
        elif a == "--covered":
            covered = True
        elif a == "--end":
            p_, k_, n_ = args.pop(0).split(":")
            ends.append((int(p_), k_, int(n_)))
        elif a == "--kinds":
            kinds = args.pop(0).split(",")
    evs, forks = [], []
    for line in open(path):
        # entries and exits, most of a trace, are not read (replay
        # writes the kind first: a run's checks spent ~40 s of CPU
        # parsing them)
        if line.startswith(('{"kind":"entry"', '{"kind":"exit"')):
            continue
        e = json.loads(line)
        if e["kind"] in ("send", "recv"):
            evs.append(e)
        elif e["kind"] == "fork":
            forks.append(e)
    if pids:
        evs = [e for e in evs if e["pid"] in pids]
    probs = []
    sends = collections.defaultdict(list)
    for e in evs:
        if e["kind"] == "send":
            sends[(e["pid"], e["tid"], e["ts_ns"])].append(e)
    first, last = {}, {}
    stream_sends = collections.defaultdict(list)  # by channel
    for e in evs:
        if e["kind"] == "send" and "offset" in e:
            stream_sends[e["chan"]].append(e)
            k = (e["chan"], e["pid"])
            first[k] = min(first.get(k, e["offset"]), e["offset"])
            last[k] = max(last.get(k, 0), e["offset"] + e["bytes"])
    # --within: a thread's first traced send on a channel may be a call
    # the agent adopted in flight, which the injection's stop cut short
    # (the program sent the rest with its next call)
    first_send = {}
    by_start = {}
    for e in evs:
        if e["kind"] == "send" and "offset" in e:
            k = (e["chan"], e["pid"], e["tid"])
            if k not in first_send or e["ts_ns"] < first_send[k]["ts_ns"]:
                first_send[k] = e
            by_start[(e["chan"], e["pid"], e["offset"])] = e
    nrecv = nmatch = 0
    for e in evs:
        for f in ("fd", "bytes", "peer", "chan"):
            if f not in e:
                probs.append("%s without %s: %s" % (e["kind"], f, json.dumps(e)))
        if e["kind"] != "recv":
            continue
        if late and "offset" in e:
            starts = [v for (c, p), v in first.items()
                      if c == e.get("chan") and p != e["pid"]]
            if not starts or e["offset"] < min(starts):
                continue  # sent before the sender was traced
        if covered and "offset" in e and not any(
                s["pid"] != e["pid"] and
                s["offset"] <= e["offset"] < s["offset"] + s["bytes"]
                for s in stream_sends[e.get("chan")]):
            continue  # its first byte went out untraced
        if open_end and "offset" in e:
            lasts = [v for (c, p), v in last.items()
                     if c == e.get("chan") and p != e["pid"]]
            if lasts and e["offset"] >= max(lasts):
                continue  # sent after the sender's tracing ended
        nrecv += 1
        m = e.get("match")
        if not m:
            probs.append("recv not matched: %s" % json.dumps(e))
            continue
        cand = sends.get((m["pid"], m["tid"], m["ts_ns"]), [])
        cand = [s for s in cand if s.get("chan") == e.get("chan")]
        if not cand:
            probs.append("recv matched to no send of its channel: %s" % json.dumps(e))
            continue
        if "offset" in e:
            ok = [s for s in cand if "offset" in s and
                  s["offset"] <= e["offset"] < s["offset"] + s["bytes"]]
            if not ok:
                probs.append("recv offset %d outside its send %s: %s" % (
                    e["offset"], json.dumps(cand[0]), json.dumps(e)))
                continue
            def holds(s):
                end = s["offset"] + s["bytes"]
                if e["offset"] + e["bytes"] <= end:
                    return True
                nxt = by_start.get((s["chan"], s["pid"], end))
                return (first_send.get((s["chan"], s["pid"], s["tid"])) is s
                        and nxt is not None and
                        e["offset"] + e["bytes"] <= end + nxt["bytes"])
            if within and not [s for s in ok if holds(s)]:
                probs.append("recv [%d, +%d) runs past its send [%d, +%d)" % (
                    e["offset"], e["bytes"], ok[0]["offset"], ok[0]["bytes"]))
                continue
        elif not [s for s in cand if s["bytes"] == e["bytes"]]:
            probs.append("datagram of %d bytes matched to one of %d" % (
                e["bytes"], cand[0]["bytes"]))
            continue
        nmatch += 1
    if from_zero:
        spans = collections.defaultdict(list)
        for e in evs:
            if "offset" in e:
                # one direction: its channel and the other end as seen
                # (several processes may share an end after a fork)
                spans[(e["kind"], e["chan"], e["peer"])].append(
                    (e["offset"], e["bytes"]))
        for key, v in spans.items():
            v.sort()
            at = 0
            for off, n in v:
                if off != at:
                    probs.append("%s on %s: offset %d, expected %d" % (
                        key[0], key[1], off, at))
                    break
                at += n
    if report:
        # the process tree: server -> client -> helper
        parent = {f["child"]: f["pid"] for f in forks}
        roles = {}
        for pid in {e["pid"] for e in evs} | set(parent):
            depth, p = 0, pid
            while p in parent:
                p = parent[p]
                depth += 1
            roles[pid] = ("server", "client", "helper")[min(depth, 2)]
        got = collections.Counter()
        for e in evs:
            role = roles.get(e["pid"], "other")
            got[(role, e["kind"], kind_of(e))] += e["bytes"]
        for line in open(report):
            w = line.split()
            if len(w) == 4 and w[1] in ("sent", "recv"):
                k = (w[0], "send" if w[1] == "sent" else "recv", w[2])
                if got[k] != int(w[3]):
                    probs.append("%s %s %s: program says %s bytes, events %d"
                                 % (w[0], w[1], w[2], w[3], got[k]))
    for pid, k, n in ends:
        v = [e["offset"] + e["bytes"] for e in evs
             if e["pid"] == pid and e["kind"] == k and "offset" in e]
        if not v:
            probs.append("pid %d: no %s events" % (pid, k))
        elif max(v) != n:
            probs.append("pid %d: %s events end at offset %d, the program "
                         "says %d" % (pid, k, max(v), n))
    if kinds:
        seen = {kind_of(e) for e in evs}
        for k in kinds:
            if k not in seen:
                probs.append("no %s events" % k)
    if nrecv == 0:
        probs.append("no recv events at all")
    for p in probs[:20]:
        print(p)
    if len(probs) > 20:
        print("... %d problems in all" % len(probs))
    print("%d recv, %d matched, %d problem(s)" % (nrecv, nmatch, len(probs)),
          file=sys.stderr)
    return 1 if probs else 0


sys.exit(main())
