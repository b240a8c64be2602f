#!/usr/bin/env python3
"""tests/e2e/export-trace-check.py - check `propel export --format=chrome`
and `--format=folded` against the same session's `propel replay
--format=jsonl` (the one reader both sit on, engine/replay.c).

  export-trace-check.py chrome REPLAY.jsonl CHROME.json
  export-trace-check.py folded REPLAY.jsonl TIME.folded COUNTS.folded MERGED.folded
  export-trace-check.py otlp REPLAY.jsonl OTLP.json [multi]
  export-trace-check.py dotcalls REPLAY.jsonl CALLS.dot

Prints one "PASS name" or "FAIL name: why" line per check (tests/run.sh
counts them) and exits 1 when any failed.
"""
import collections
import json
import sys

fails = 0


def check(name, ok, why=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, why))


def load_replay(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_thread(events):
    t = collections.OrderedDict()
    for e in events:
        t.setdefault((e["pid"], e["tid"]), []).append(e)
    return t


def calls_with_parents(rev):
    """(func, parent func or None) of each entry of one thread's replay
    events, in order: the parent is the entry open one depth up (an exec
    or a gap ends everything open)."""
    out, st = [], {}
    for e in rev:
        if e["kind"] == "entry":
            d = e["depth"]
            out.append((e["func"], st.get(d - 1)))
            st = {k: v for k, v in st.items() if k < d}
            st[d] = e["func"]
        elif e["kind"] == "exit":
            st = {k: v for k, v in st.items() if k < e["depth"]}
        elif e["kind"] in ("exec", "lost"):
            st = {}
    return out


def chrome(replay, path):
    with open(path) as f:
        doc = json.load(f)
    check("chrome/json", isinstance(doc.get("traceEvents"), list),
          "no traceEvents array")
    evs = doc["traceEvents"]
    t0 = doc.get("otherData", {}).get("t0_ns", 0)
    ph = collections.Counter(e["ph"] for e in evs)
    entries = [e for e in replay if e["kind"] == "entry"]
    others = [e for e in replay if e["kind"] not in ("entry", "exit")]
    check("chrome/calls", ph["B"] + ph["X"] == len(entries),
          "B %d + X %d != %d entries" % (ph["B"], ph["X"], len(entries)))
    check("chrome/instants", ph["i"] == len(others),
          "%d i != %d other events" % (ph["i"], len(others)))
    # every call's parent: in the trace the B slice open around it (B/E/X
    # in the order written; an X holds nothing, its exit is the thread's
    # next event), in the replay the entry open one depth up (an exec or
    # a gap ends everything open) -- the same call or none in both
    calls = collections.defaultdict(list)
    for e in evs:
        if e["ph"] in ("B", "X", "E"):
            calls[(e["pid"], e["tid"])].append(e)
    bad = []
    for key, rev in by_thread(replay).items():
        want = calls_with_parents(rev)
        got, bst = [], []
        for e in calls.get(key, []):
            if e["ph"] == "E":
                if bst:
                    bst.pop()
                continue
            got.append((e["name"], bst[-1] if bst else None))
            if e["ph"] == "B":
                bst.append(e["name"])
        if got != want:
            i = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                     min(len(got), len(want)))
            bad.append("%s: call %d: trace %s, replay %s (%d vs %d calls)" %
                       (key, i, got[i] if i < len(got) else None,
                        want[i] if i < len(want) else None, len(got),
                        len(want)))
    check("chrome/parents-agree-with-replay", not bad, "; ".join(bad[:3]))
    # every matched message once, as an arrow from its send to its recv
    called = set(k for k, rev in by_thread(replay).items()
                 if any(e["kind"] == "entry" for e in rev))
    recvs = [e for e in replay if e["kind"] == "recv" and "match" in e
             and (e["pid"], e["tid"]) in called]
    s = [e for e in evs if e["ph"] == "s"]
    f = [e for e in evs if e["ph"] == "f"]
    ids = collections.Counter(e["id"] for e in s)
    check("chrome/messages-once",
          len(s) == len(recvs) and len(f) == len(recvs) and
          all(v == 1 for v in ids.values()) and
          set(ids) == set(e["id"] for e in f),
          "%d s, %d f, %d matched recvs" % (len(s), len(f), len(recvs)))
    sends = set((e["pid"], e["tid"], e["ts_ns"]) for e in replay
                if e["kind"] == "send")
    def ns(e):
        a, _, b = str(e["ts"]).partition(".")
        return int(a) * 1000 + int((b + "000")[:3]) + t0
    at_send = [e for e in s if (e["pid"], e["tid"], ns(e)) in sends]
    check("chrome/arrows-start-at-sends", len(at_send) == len(s),
          "%d of %d s events are not at a send" % (len(s) - len(at_send), len(s)))
    pids = set(e["pid"] for e in replay)
    named = set(e["pid"] for e in evs
                if e["ph"] == "M" and e["name"] == "process_name")
    check("chrome/process-names", pids <= named,
          "unnamed: %s" % sorted(pids - named))


def load_folded(path):
    out = {}
    with open(path) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            out[stack] = int(w)
    return out


def folded(replay, tpath, cpath, mpath):
    ft, fc, fm = load_folded(tpath), load_folded(cpath), load_folded(mpath)
    entries = [e for e in replay if e["kind"] == "entry"]
    check("folded/counts-are-calls", sum(fc.values()) == len(entries),
          "%d != %d entries" % (sum(fc.values()), len(entries)))
    check("folded/merged-same-calls", sum(fm.values()) == len(entries),
          "%d != %d entries" % (sum(fm.values()), len(entries)))
    # the same counts, rebuilt from the replay: every entry's stack
    want = collections.Counter()
    for key, rev in by_thread(replay).items():
        st = []
        for e in rev:
            if e["kind"] == "entry":
                d = e["depth"]
                st = st[:d] + ["[unknown]"] * (d - len(st)) + [e["func"]]
                want[";".join(st)] += 1
            elif e["kind"] == "exit":
                st = st[:e["depth"]]
            elif e["kind"] == "lost":
                st = []
    check("folded/merged-stacks-equal-replay", dict(want) == fm,
          "%d stacks vs %d; first difference %s" %
          (len(fm), len(want),
           next(iter(set(want.items()) ^ set(fm.items())), None)))
    # time: each thread's self time adds up to the span its calls cover
    procs = collections.Counter()
    for stack, w in ft.items():
        procs[stack.split(";")[0]] += w
    span = collections.Counter()
    for (pid, tid), rev in by_thread(replay).items():
        depth_open, last = 0, None
        for e in rev:
            if last is not None and depth_open > 0:
                span[pid] += e["ts_ns"] - last
            last = e["ts_ns"]
            if e["kind"] == "entry":
                depth_open = e["depth"] + 1
            elif e["kind"] == "exit":
                depth_open = e["depth"]
            elif e["kind"] == "lost":
                depth_open = 0
    got = {int(k.rsplit("[", 1)[1].rstrip("]")): v for k, v in procs.items()}
    check("folded/time-per-process", got == {p: v for p, v in span.items() if v},
          "folded %s, replay %s" % (sorted(got.items())[:4], sorted(span.items())[:4]))


def otlp(replay, path, multi=False):
    with open(path) as f:
        doc = json.load(f)
    spans, res = [], {}
    for rs in doc.get("resourceSpans", []):
        attrs = {a["key"]: list(a["value"].values())[0]
                 for a in rs["resource"]["attributes"]}
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                spans.append((int(attrs["process.pid"]), int(attrs["thread.id"]), sp))
                res.setdefault(int(attrs["process.pid"]), attrs)
    entries = [e for e in replay if e["kind"] == "entry"]
    check("otlp/spans-are-calls", len(spans) == len(entries),
          "%d spans, %d entries" % (len(spans), len(entries)))
    byid = {sp["spanId"]: (pid, tid, sp) for pid, tid, sp in spans}
    check("otlp/ids-unique", len(byid) == len(spans),
          "%d distinct span ids of %d" % (len(byid), len(spans)))
    # callers: a span's caller (the replay's enclosing call) is its parent
    # when both are in one trace, else a link marked propel.caller to a
    # span of its thread in another trace.  A parent in another thread is
    # of the same trace: the span that sent a message whose recv is in the
    # child's thread (a message link there points at it), or that forked
    # the child's process; it began before the child
    def is_caller(l):
        return any(a["key"] == "propel.caller" for a in l.get("attributes", []))
    msg_targets = collections.defaultdict(set)
    for pid, tid, sp in spans:
        for l in sp.get("links", []):
            if not is_caller(l):
                msg_targets[(pid, tid)].add(l["spanId"])
    forker = {}
    for e in replay:
        if e["kind"] == "fork":
            forker[e["child"]] = (e["pid"], e["ts_ns"])
    want = collections.Counter()
    for key, rev in by_thread(replay).items():
        for func, parent in calls_with_parents(rev):
            want[(key, func, parent)] += 1
    got, bad, cross = collections.Counter(), [], 0
    for pid, tid, sp in spans:
        pid_ = sp.get("parentSpanId")
        par = byid.get(pid_)
        cl = [l for l in sp.get("links", []) if is_caller(l)]
        caller = None
        if pid_ and (not par or par[2]["traceId"] != sp["traceId"]):
            bad.append("%s: parent %s not in its trace" % (sp["name"], pid_))
        elif par and (par[0], par[1]) == (pid, tid):
            caller = par[2]["name"]
            if cl:
                bad.append("%s: a caller link beside a parent in its thread" % sp["name"])
            if not (int(par[2]["startTimeUnixNano"]) <= int(sp["startTimeUnixNano"])
                    <= int(sp["endTimeUnixNano"]) <= int(par[2]["endTimeUnixNano"])):
                bad.append("%s: not inside its parent %s" % (sp["name"], par[2]["name"]))
        elif par:
            cross += 1
            fk = forker.get(pid)
            if not (pid_ in msg_targets[(pid, tid)] or
                    (fk and fk[0] == par[0] and
                     int(par[2]["startTimeUnixNano"]) <= int(sp["startTimeUnixNano"]))):
                bad.append("%s: parent %s in pid %d neither sent to its thread nor forked it"
                           % (sp["name"], par[2]["name"], par[0]))
            elif int(par[2]["startTimeUnixNano"]) > int(sp["startTimeUnixNano"]):
                bad.append("%s: starts before its parent %s" % (sp["name"], par[2]["name"]))
        if caller is None and cl:
            c = byid.get(cl[0]["spanId"])
            if len(cl) > 1 or not c or (c[0], c[1]) != (pid, tid):
                bad.append("%s: caller link not to one span of its thread" % sp["name"])
            elif c[2]["traceId"] == sp["traceId"] or c[2]["traceId"] != cl[0]["traceId"]:
                bad.append("%s: caller link within its trace (should be the parent)" % sp["name"])
            else:
                caller = c[2]["name"]
        got[((pid, tid), sp["name"], caller)] += 1
    check("otlp/parents-agree-with-replay", not bad and got == want,
          "; ".join(bad[:2]) or "first difference %s" %
          (next(iter(set(got.items()) ^ set(want.items())), None),))
    # links: one per matched recv, to a span of the sender's process
    called = set(k for k, rev in by_thread(replay).items()
                 if any(e["kind"] == "entry" for e in rev))
    recvs = [e for e in replay if e["kind"] == "recv" and "match" in e
             and (e["pid"], e["tid"]) in called]
    links = [(pid, l) for pid, tid, sp in spans for l in sp.get("links", [])
             if not is_caller(l)]
    ok = [l for pid, l in links if l["spanId"] in byid and
          byid[l["spanId"]][2]["traceId"] == l["traceId"]]
    check("otlp/messages-once", len(links) == len(recvs) and len(ok) == len(links),
          "%d links (%d to a span), %d matched recvs" % (len(links), len(ok), len(recvs)))
    if multi:
        # a trace per flow: a request's calls in several processes share
        # one trace, joined by parents across processes
        tp = collections.defaultdict(set)
        for pid, tid, sp in spans:
            tp[sp["traceId"]].add(pid)
        check("otlp/cross-process-traces", cross > 0 and max(len(v) for v in tp.values()) > 1,
              "%d spans with a parent in another process; traces span at most %d processes"
              % (cross, max((len(v) for v in tp.values()), default=0)))
    # events: every non-call event of a thread with calls is an event of a
    # span (one outside every call, of the outermost call before it, or
    # after it at the thread's start), with the replay's fields
    want_ev = collections.Counter()
    for key, rev in by_thread(replay).items():
        if not any(e["kind"] == "entry" for e in rev):
            continue
        for e in rev:
            if e["kind"] not in ("entry", "exit"):
                f = {k: v for k, v in e.items()
                     if k not in ("kind", "pid", "tid", "ts_ns")}
                want_ev[(e["kind"], json.dumps(f, sort_keys=True))] += 1
    got_ev = collections.Counter()
    for pid, tid, sp in spans:
        for ev in sp.get("events", []):
            f = json.loads(ev["attributes"][0]["value"]["stringValue"])
            got_ev[(ev["name"], json.dumps(f, sort_keys=True))] += 1
    check("otlp/events", got_ev == want_ev and sum(want_ev.values()) > 0,
          "%d span events, replay %d; first difference %s" %
          (sum(got_ev.values()), sum(want_ev.values()),
           next(iter(set(got_ev.items()) ^ set(want_ev.items())), None)))
    pids = set(e["pid"] for e in replay)
    named = all(res.get(p, {}).get("service.name") and res[p].get("host.name") is not None
                for p in pids if p in res)
    check("otlp/resources", named and set(res) <= pids,
          "resources %s, pids %s" % (sorted(res), sorted(pids)))


def dotcalls(replay, path):
    import re
    text = open(path).read()
    label = dict(re.findall(r'^\t\t"(c\d+_[0-9a-f]+)" \[shape=ellipse, label="((?:[^"\\]|\\.)*)"\];$',
                            text, re.M))
    got = collections.Counter()
    for a, b, n in re.findall(r'^\t"([cp][0-9a-f_]+)" -> "(c\d+_[0-9a-f]+)" \[label="(\d+)"', text, re.M):
        pid = int(re.match(r"[cp](\d+)", b).group(1))
        caller = label.get(a, "") if a.startswith("c") else ""
        got[(pid, caller, label.get(b, "?"))] += int(n)
    want = collections.Counter()
    for key, rev in by_thread(replay).items():
        for func, parent in calls_with_parents(rev):
            want[(key[0], parent or "", func)] += 1
    check("dot-calls/edges-are-calls", got == want and sum(want.values()) > 0,
          "%d calls in %d edges, replay %d in %d; first difference %s" %
          (sum(got.values()), len(got), sum(want.values()), len(want),
           next(iter(set(got.items()) ^ set(want.items())), None)))


def main():
    what = sys.argv[1]
    replay = load_replay(sys.argv[2])
    if what == "chrome":
        chrome(replay, sys.argv[3])
    elif what == "otlp":
        otlp(replay, sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "multi")
    elif what == "dotcalls":
        dotcalls(replay, sys.argv[3])
    else:
        folded(replay, sys.argv[3], sys.argv[4], sys.argv[5])
    sys.exit(1 if fails else 0)


main()
