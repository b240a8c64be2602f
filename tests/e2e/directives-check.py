#!/usr/bin/env python3
# tests/e2e/directives-check.py JSONL FLOWS_JSON with|without
#
# The flows of a tests/fixtures/report/jobq.c recording, rebuilt from its
# replay JSONL by the fixture's structure, against `propel report --flows
# --format=json`:
#   - each recv (bytes > 0) of the first process starts a flow, in time
#     order; the main thread's events from one start to the next are its,
#     but the process's set-up and tear-down (lifecycle_rule.py);
#   - with the directive 'enqueue:entry,arg1 -> dequeue:exit,ret', the
#     worker's events from an exit of dequeue whose value an earlier
#     enqueue entry had, to the next such exit, are that enqueue's flow
#     (and every flow holds a run_job of the worker's); without it the
#     worker's events are in no flow, nor are the client's.
# Exit 0 when the report's flows (count, start time, events) are these.
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lifecycle_rule import lifecycle  # noqa: E402

evs = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))["flows"]
mode = sys.argv[3]
bad = []
# set-up and tear-down are no flow's (README)
life = {id(e) for e, x in zip(evs, lifecycle(evs)) if x}

threads = {}
for e in evs:
    threads.setdefault((e["pid"], e["tid"]), []).append(e)
first = min(threads.values(), key=lambda th: th[0]["ts_ns"])[0]["pid"]
main = threads[(first, first)]
workers = [th for (p, t), th in threads.items() if p == first and t != first]

flow_of = {}  # id(event) -> flow (1-based)
starts = sorted((e for th in threads.values() for e in th
                 if e["pid"] == first and e["kind"] == "recv" and e["bytes"] > 0),
                key=lambda e: e["ts_ns"])
start_no = {id(e): k + 1 for k, e in enumerate(starts)}
cur = None
for e in main:
    cur = start_no.get(id(e), cur)
    if cur and id(e) not in life:
        flow_of[id(e)] = cur
enq = [e for e in main if e["kind"] == "entry" and e["func"] == "enqueue"]
if mode == "with":
    if not enq or any("value" not in e for e in enq):
        bad.append("an enqueue entry without its value")
    for th in workers:
        cur = None
        for e in th:
            if e["kind"] == "exit" and e["func"] == "dequeue" and "value" in e:
                src = [x for x in enq if x.get("value") == e["value"]
                       and x["ts_ns"] <= e["ts_ns"]]
                if src:
                    cur = flow_of.get(id(src[-1]))
            if cur and id(e) not in life:
                flow_of[id(e)] = cur

want = {}
for e in evs:
    f = flow_of.get(id(e))
    if f:
        want[f] = want.get(f, 0) + 1
if len(rep) != len(starts):
    bad.append("%d flows, want %d" % (len(rep), len(starts)))
for f in rep:
    k = f["id"]
    if k > len(starts):
        continue
    if f["start"]["ts_ns"] != starts[k - 1]["ts_ns"]:
        bad.append("flow %d starts at %d, want %d" % (k, f["start"]["ts_ns"],
                                                      starts[k - 1]["ts_ns"]))
    if f["events"] != want.get(k, 0):
        bad.append("flow %d: %d events, want %d" % (k, f["events"], want.get(k, 0)))
    if f["pids"] != [first]:
        bad.append("flow %d: pids %s, want [%d]" % (k, f["pids"], first))
# the dequeuing thread's work: in every flow with it, in none without
for k in range(1, len(starts) + 1):
    n = sum(1 for th in workers for e in th
            if flow_of.get(id(e)) == k and e["kind"] == "entry" and e["func"] == "run_job")
    if mode == "with" and n != 1:
        bad.append("flow %d holds %d run_job calls of the worker, want 1" % (k, n))
    if mode == "without" and n:
        bad.append("flow %d holds a run_job call of the worker" % k)
if bad:
    print("; ".join(bad[:6]))
    sys.exit(1)
