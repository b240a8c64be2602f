#!/usr/bin/env python3
"""tests/e2e/vitals-trace-check.py - judge `propel replay --format=jsonl` of
a `propel record --vitals -- offcpu DIR` session (tests/fixtures/vitals/
offcpu.c): each long call has an off-CPU span of the right reason inside it,
on the thread that made it.

usage: vitals-trace-check.py record JSONL     one PASS/FAIL line per check
       vitals-trace-check.py loop JSONL N     (attach) N naps, each a sleep

A span is inside a call when it starts no earlier than the call's entry and
ends no later than its exit, give or take TOL_NS: kernel times are
bpf_ktime_get_ns, the trace's are TSC ticks converted to the same clock
(engine/ingest.c), and the two agree to about a microsecond.
"""
import json
import sys

TOL_NS = 1_000  # README: the two clocks agree to about a microsecond
MIN_NS = 40_000_000


def load(path):
    by_tid = {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    return by_tid


def calls(events, func):
    """(entry, exit) pairs of func in one thread's events."""
    out, stack = [], []
    for e in events:
        if e["kind"] == "entry":
            stack.append(e)
        elif e["kind"] == "exit" and stack:
            en = stack.pop()
            # an entry rebuilt for a call under way at the attach is dated
            # at the thread's first kept event, not at the call's start:
            # no span can lie inside it
            if en["func"] == func and not en.get("rebuilt"):
                out.append((en["ts_ns"], e["ts_ns"]))
    return out


OVER = []  # how far each span taken reaches outside its call, ns


def spans_in(events, t0, t1):
    sp = [e for e in events if e["kind"] == "offcpu"
          and e["ts_ns"] >= t0 - TOL_NS
          and e["ts_ns"] + e["dur_ns"] <= t1 + TOL_NS]
    OVER.extend(max(0, t0 - e["ts_ns"], e["ts_ns"] + e["dur_ns"] - t1)
                for e in sp)
    return sp


def check(name, ok, why):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + why))
    return ok


def main():
    mode, path = sys.argv[1], sys.argv[2]
    by_tid = load(path)
    if mode == "loop":
        n = int(sys.argv[3])
        naps = [(k, c) for k, ev in by_tid.items() for c in calls(ev, "nap")]
        good = 0
        for k, (t0, t1) in naps:
            sp = spans_in(by_tid[k], t0, t1)
            if any(s["reason"] == "sleep" and s["dur_ns"] >= MIN_NS
                   for s in sp):
                good += 1
        check("vitals-trace/attach-naps", len(naps) >= n and good == len(naps),
              "%d naps traced, %d with a sleep span >= 40 ms" %
              (len(naps), good))
        return
    main_key = None
    for k, ev in by_tid.items():
        if calls(ev, "main") and calls(ev, "contend"):
            main_key = k
    if not check("vitals-trace/main-thread", main_key is not None,
                 "no thread called main and contend"):
        return
    ev = by_tid[main_key]
    # call -> expected reason, syscall; fsync's length is the disk's, so
    # its span must cover most of the call rather than 40 ms
    want = [("nap", "sleep", ("nanosleep", "clock_nanosleep")),
            ("pipe_read", "pipe", ("read",)),
            ("fsync", "io", ("fsync",)),
            ("pthread_mutex_lock", "lock", ("futex",))]
    for func, reason, sysc in want:
        cs = calls(ev, func)
        if func == "pthread_mutex_lock":
            # the contended one: inside contend, the longest
            cs = sorted(cs, key=lambda c: c[1] - c[0])[-1:]
        if not check("vitals-trace/%s-traced" % func, len(cs) == 1,
                     "%d calls" % len(cs)):
            continue
        t0, t1 = cs[0]
        sp = [s for s in spans_in(ev, t0, t1) if s["reason"] == reason]
        total = sum(s["dur_ns"] for s in sp)
        floor = MIN_NS if func != "fsync" else max(1_000_000, (t1 - t0) // 2)
        check("vitals-trace/%s-offcpu-%s" % (func, reason),
              sp and total >= floor and all(s.get("syscall") in sysc
                                            for s in sp),
              "call %.1f ms, spans %s" % ((t1 - t0) / 1e6, [
                  (s["reason"], s.get("syscall"), s["dur_ns"] // 1000)
                  for s in spans_in(ev, t0, t1)]))
        if func == "pthread_mutex_lock":
            # meanwhile the holder, another thread, sleeps: its span is on
            # its own thread, not on the waiter's
            check("vitals-trace/lock-holder-sleeps-elsewhere",
                  any(s["kind"] == "offcpu" and s["reason"] == "sleep"
                      and s["ts_ns"] < t1 and s["ts_ns"] + s["dur_ns"] > t0
                      for k, e2 in by_tid.items() if k != main_key
                      for s in e2),
                  "no other thread sleeps while main waits on the lock")
            check("vitals-trace/lock-wait-not-a-sleep",
                  not any(s["reason"] == "sleep" and s["dur_ns"] >= MIN_NS
                          for s in spans_in(ev, t0, t1)),
                  "the waiter has a sleep span inside its lock call")
    # poke() raises SIGUSR1, taken by a handler: the kernel's delivery is
    # inside the call, on the thread
    cs = calls(ev, "poke")
    sig = [e for e in ev if e["kind"] == "ksignal" and cs
           and cs[0][0] - TOL_NS <= e["ts_ns"] <= cs[0][1] + TOL_NS]
    check("vitals-trace/poke-ksignal",
          len(cs) == 1 and len(sig) == 1 and sig[0]["signo"] == 10
          and sig[0]["handled"] is True,
          "poke calls %d, ksignals in it %s" % (len(cs), sig))
    # the pipe writer, a child forked by the traced program
    child = [k for k in by_tid if k[0] != main_key[0]]
    check("vitals-trace/child-followed",
          any(s["kind"] == "offcpu" and s["reason"] == "sleep"
              for k in child for s in by_tid[k]),
          "no off-CPU span in the forked writer %s" % child)
    # spans come in time order among each thread's events
    bad = 0
    for k, e2 in by_tid.items():
        for a, b in zip(e2, e2[1:]):
            if "offcpu" in (a["kind"], b["kind"]) and b["ts_ns"] < a["ts_ns"]:
                bad += 1
    check("vitals-trace/spans-in-order", bad == 0, "%d threads" % bad)


main()
# the measured skew, for the log (README "agree to about a microsecond")
if OVER:
    print("# %d spans inside calls, the farthest %d ns outside its call"
          % (len(OVER), max(OVER)))
