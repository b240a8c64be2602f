#!/usr/bin/env python3
"""tests/e2e/export-check.py - check a `propel export --format=dot` diagram
against the session's `propel replay --format=jsonl`.

  export-check.py DOT JSONL [--hosts PID=HOST,...] [--waits]

The diagram's nodes ("pPID") must be exactly the pids that have events;
its message edges ("KIND: N msgs, B bytes") exactly the matched recvs
grouped by (sending pid, receiving pid, channel kind), with their count
and bytes; its fork edges exactly the fork events whose child is in the
session; each node inside the cluster of its host (--hosts; default: all
in one cluster); --waits: a wait edge for every fork edge (every child
reaped); and the first-line totals agree.  Prints one line per problem
and exits 1 if there was any.
"""
import collections
import json
import re
import sys


def main():
    args = sys.argv[1:]
    dot_path, jsonl = args.pop(0), args.pop(0)
    hosts, waits = None, False
    while args:
        a = args.pop(0)
        if a == "--hosts":
            hosts = dict(kv.split("=") for kv in args.pop(0).split(","))
            hosts = {int(k): v for k, v in hosts.items()}
        elif a == "--waits":
            waits = True
    pids, forks = set(), set()
    msgs = collections.defaultdict(lambda: [0, 0])
    for line in open(jsonl):
        e = json.loads(line)
        pids.add(e["pid"])
        if e["kind"] == "fork":
            forks.add((e["pid"], e["child"]))
        if e["kind"] == "recv" and "match" in e:
            k = (e["match"]["pid"], e["pid"], e["chan"].split(":", 1)[0])
            msgs[k][0] += 1
            msgs[k][1] += e["bytes"]
    forks = {f for f in forks if f[1] in pids}

    text = open(dot_path).read()
    probs = []
    nodes, where = set(), {}
    cluster = None
    for line in text.splitlines():
        m = re.match(r'\s*subgraph "cluster_\d+" \{', line)
        if m:
            cluster = "?"
            continue
        m = re.match(r'\s*label="host (.*)";', line)
        if m and cluster == "?":
            cluster = m.group(1)
            continue
        m = re.match(r'\s*"p(\d+)" \[label=', line)
        if m:
            nodes.add(int(m.group(1)))
            where[int(m.group(1))] = cluster
            continue
        if re.match(r"\s*\}$", line):
            cluster = None
    edges = collections.defaultdict(list)
    for m in re.finditer(r'"p(\d+)" -> "p(\d+)" \[label="([^"]*)"', text):
        edges[m.group(3).split(":")[0]].append(
            (int(m.group(1)), int(m.group(2)), m.group(3)))
    got = {}
    for kind in ("tcp", "udp", "unix", "pipe"):
        for a, b, lab in edges.get(kind, []):
            m = re.match(r"(\w+): (\d+) msgs, (\d+) bytes$", lab)
            if not m:
                probs.append("bad message label %r" % lab)
                continue
            if (a, b, kind) in got:
                probs.append("two %s edges %d -> %d" % (kind, a, b))
            got[(a, b, kind)] = [int(m.group(2)), int(m.group(3))]
    if nodes != pids:
        probs.append("nodes %s, the session's pids %s" % (
            sorted(nodes), sorted(pids)))
    want = {k: v for k, v in msgs.items()}
    if got != want:
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                probs.append("messages %d -> %d %s: diagram %s, replay %s" % (
                    k[0], k[1], k[2], got.get(k), want.get(k)))
    fork_edges = {(a, b) for a, b, _ in edges.get("fork", [])}
    if fork_edges != forks:
        probs.append("fork edges %s, fork events %s" % (
            sorted(fork_edges), sorted(forks)))
    wait_edges = {(b, a) for a, b, _ in edges.get("wait", [])}
    if waits and wait_edges != forks:
        probs.append("wait edges %s, forks %s" % (
            sorted(wait_edges), sorted(forks)))
    if not wait_edges <= forks:
        probs.append("a wait edge without its fork: %s" % sorted(wait_edges - forks))
    if hosts:
        for p in nodes:
            if where.get(p) != hosts.get(p, hosts.get(0)):
                probs.append("pid %d in cluster %r, its host is %r" % (
                    p, where.get(p), hosts.get(p, hosts.get(0))))
    elif len(set(where.values())) != 1 or None in where.values():
        probs.append("not one cluster: %s" % sorted(set(map(str, where.values()))))
    m = re.match(r"// propel: (\d+) processes, (\d+) hosts, (\d+) message "
                 r"edges \((\d+) messages\), (\d+) forks, (\d+) waits", text)
    if not m:
        probs.append("no totals line")
    else:
        tot = [int(x) for x in m.groups()]
        exp = [len(pids), len(set(where.values())), len(want),
               sum(v[0] for v in want.values()), len(forks), len(wait_edges)]
        if tot != exp:
            probs.append("totals %s, expected %s" % (tot, exp))
    if not want:
        probs.append("no matched messages at all")
    for p in probs[:20]:
        print(p)
    print("%d nodes, %d message edges (%d messages), %d forks, %d waits, "
          "%d problem(s)" % (len(nodes), len(got),
                             sum(v[0] for v in got.values()), len(fork_edges),
                             len(wait_edges), len(probs)), file=sys.stderr)
    return 1 if probs else 0


sys.exit(main())
