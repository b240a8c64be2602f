#!/usr/bin/env python3
"""tests/e2e/report-check.py - check `propel report --flows --format=json`
against the session's `propel replay --format=jsonl` and the farm fixture's
own account of which worker served which request.

  report-check.py REPLAY.jsonl FLOWS.json FARM.out

From the JSONL alone it rebuilds the flows by the rules of
self-propelled §3 (an independent reading, not the C code): a thread's
next event follows it unless it is a recv of at least one byte (a matched
recv has the send as a second predecessor; an unmatched one an untraced
sender); a send leads to the recvs matched to it, a fork to the child's
first event; starts are the recvs of the first traced process, in time
order, each taking what it reaches and is not yet taken; a process's
set-up and tear-down (README: before main's entry; after main returns,
an exit call is entered or process_exit) are in no flow.  Then:
  - as many flows as requests, in request order;
  - flow i's pids are exactly {server, the worker FARM.out names for
    request i-1, submitter};
  - each flow's start (pid, tid, ts_ns), event count and duration equal
    the rebuilt ones.
Prints what differs and exits 1, or exits 0.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lifecycle_rule import lifecycle  # noqa: E402


def main():
    evs = [json.loads(l) for l in open(sys.argv[1])]
    rep = json.load(open(sys.argv[2]))["flows"]
    farm = open(sys.argv[3]).read().split("\n")
    server = sub = None
    worker = {}
    for l in farm:
        w = l.split()
        if len(w) == 2 and w[0] == "server":
            server = int(w[1])
        elif len(w) == 2 and w[0] == "submitter":
            sub = int(w[1])
        elif len(w) == 4 and w[0] == "req":
            worker[int(w[1])] = int(w[3])
    # threads, in file order (replay: each thread's events in time order)
    nxt = [None] * len(evs)
    first_of_tid = {}
    for i, e in enumerate(evs):
        if i + 1 < len(evs) and evs[i + 1]["tid"] == e["tid"] and \
                evs[i + 1]["pid"] == e["pid"]:
            nxt[i] = i + 1
        first_of_tid.setdefault(e["tid"], i)
    sends = {}
    for i, e in enumerate(evs):
        if e["kind"] == "send":
            sends.setdefault((e["pid"], e["tid"], e["ts_ns"]), i)
    out = [[] for _ in evs]
    children = set()
    for i, e in enumerate(evs):
        if e["kind"] == "recv" and "match" in e:
            m = e["match"]
            s = sends.get((m["pid"], m["tid"], m["ts_ns"]))
            if s is not None:
                out[s].append(i)
        if e["kind"] == "fork":
            children.add(e["child"])
            if e["child"] in first_of_tid:
                out[i].append(first_of_tid[e["child"]])
    cut = [e["kind"] == "recv" and e["bytes"] > 0 for e in evs]
    life = lifecycle(evs)
    roots = {}
    for e in evs:
        if e["pid"] not in children:
            roots[e["pid"]] = min(roots.get(e["pid"], e["ts_ns"]), e["ts_ns"])
    first = min(roots, key=lambda p: (roots[p], p))
    starts = sorted((i for i, e in enumerate(evs)
                     if e["kind"] == "recv" and e["bytes"] > 0 and
                     e["pid"] == first), key=lambda i: evs[i]["ts_ns"])
    flow = ["life" if x else None for x in life]
    flows = []
    for s in starts:
        if flow[s] is not None:
            continue
        fid = len(flows)
        flows.append(s)
        flow[s] = fid
        todo = [s]
        while todo:
            x = todo.pop()
            succ = list(out[x])
            if nxt[x] is not None and not cut[nxt[x]]:
                succ.append(nxt[x])
            for y in succ:
                if flow[y] is None:
                    flow[y] = fid
                    todo.append(y)
    bad = []
    if first != server:
        bad.append("first process %d, farm says server %d" % (first, server))
    if len(rep) != len(worker) or len(flows) != len(worker):
        bad.append("%d flows reported, %d rebuilt, %d requests" %
                   (len(rep), len(flows), len(worker)))
    for i, f in enumerate(rep):
        if i >= len(flows):
            break
        mine = [j for j in range(len(evs)) if flow[j] == i]
        ts = [evs[j]["ts_ns"] for j in mine]
        s = evs[flows[i]]
        want_pids = sorted({server, worker.get(i, -1), sub})
        if f["id"] != i + 1:
            bad.append("flow %d has id %s" % (i + 1, f["id"]))
        if sorted(f["pids"]) != want_pids:
            bad.append("flow %d pids %s, want %s" % (i + 1, f["pids"],
                                                     want_pids))
        st = f["start"]
        if (st["pid"], st["tid"], st["ts_ns"]) != (s["pid"], s["tid"],
                                                    s["ts_ns"]):
            bad.append("flow %d starts at %s, rebuilt %s" %
                       (i + 1, st, (s["pid"], s["tid"], s["ts_ns"])))
        if f["events"] != len(mine):
            bad.append("flow %d has %d events, rebuilt %d" %
                       (i + 1, f["events"], len(mine)))
        if f["duration_ns"] != max(ts) - min(ts):
            bad.append("flow %d lasts %d ns, rebuilt %d" %
                       (i + 1, f["duration_ns"], max(ts) - min(ts)))
    if bad:
        print("\n".join(bad[:10]))
        return 1
    return 0


sys.exit(main())
