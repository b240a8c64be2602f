#!/usr/bin/env python3
"""tests/normalize.py - turn a trace into the stable text the golden files hold.

Input: `propel replay --format=jsonl DB` (one JSON object per event, in time
order per thread; fields kind, pid, tid, ts_ns, func, depth, signo, ...), from
a file or stdin.  With --from-uftrace DIR it reads a uftrace data directory
instead (through `uftrace dump`), which is how the expected files were
cross-checked (tests/golden/README).

Output, one line per shown event:

    == P1 T1                 a thread section: process and thread renamed
    main                     an entry, indented two spaces per depth level
      run
        signal SIGSEGV       a signal, at the depth the thread was at

Rules (the invariants the golden files rely on):
  * no timestamps, addresses, file/line, real pids or tids;
  * processes are numbered P1, P2... in order of their first event (ts_ns);
    within a process the thread whose tid equals the pid comes first, the
    others follow ordered by their normalized text (then first ts), so
    scheduling cannot reorder them; threads are numbered T1, T2... globally
    in that output order;
  * names: parameter lists and a trailing " const" are cut
    (`Guard::~Guard()` -> `Guard::~Guard`), so are `@plt`/`@VERSION`; a C++
    clone keeps its suffix as a C clone shows it (`f(int) [clone .isra.0]`
    -> `f.isra.0`);
  * functions the toolchain puts in every program (_start, _init,
    frame_dummy, register_tm_clones, __do_global_dtors_aux, static
    initializers...) are dropped with everything called under them, and in a
    thread that contains an entry of `main`, everything before main's first
    entry is dropped ("functions before main are not shown") unless
    --before-main is given (the constructor fixtures: then the C++
    static initialisers, `_GLOBAL__sub_I_...`, are shown too);
  * --main-only keeps the first process and those that ran a main (a
    process that only ran a stripped /bin/sh, system()'s, is dropped);
  * exits only move the depth; fork/exec/thread/process events are not shown
    (the sections already show them) unless --events is given.

--from FUNC (the attach half of the golden tests, tests/e2e/golden.sh): a
trace taken by `propel attach` starts in the middle of main, so only what
happens from FUNC's first call on is compared.  In every thread section that
has an entry of FUNC, the lines before that entry are dropped and FUNC's
subtree is shifted so that FUNC is at depth 0; so is each later line at
FUNC's depth or above, with its own subtree (the fixtures call nothing from
main after FUNC, so what follows is what runs after main returned: exit
handlers).  What a trace says about the frames that predate the attach
(main, the frame the agent found the thread in) thus does not matter.
Sections without FUNC (threads started by it) are kept as they are.
With --text the input is already normalized text (an expected file), so
the same cut applied to the expected record trace gives the expected attach
trace.
Exit status 0, or 1 with a message on stderr for unreadable input.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys

TOOLCHAIN = {
    "_start", "_init", "_fini", "frame_dummy", "register_tm_clones",
    "deregister_tm_clones", "__do_global_dtors_aux", "__libc_csu_init",
    "__libc_csu_fini", "_dl_relocate_static_pie", "__cxa_finalize",
}
TOOLCHAIN_PREFIXES = ("_GLOBAL__sub_I_", "_GLOBAL__sub_D_",
                      "__static_initialization_and_destruction")
PROCESS_KINDS = ("fork", "exec", "thread_start", "thread_exit", "process_exit")


def clean_name(name):
    """Cut a demangled name's parameter list and symbol version."""
    name = (name or "?").strip()
    name = re.split(r"@", name, maxsplit=1)[0] if not name.startswith("@") else name
    clones = "".join(re.findall(r" \[clone (\.[^\]]+)\]", name))
    name = re.sub(r" \[clone [^\]]+\]", "", name)
    if name.endswith(" const"):
        name = name[:-6]
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            c = name[i]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:
                        name = name[:i]
                    break
    return name + clones


def signame(signo):
    try:
        return signal.Signals(int(signo)).name
    except (ValueError, TypeError):
        return "SIG%s" % signo


def is_toolchain(name, before_main=False):
    if before_main:  # the static initialisers are what is compared
        return name in TOOLCHAIN
    return name in TOOLCHAIN or name.startswith(TOOLCHAIN_PREFIXES)


def read_jsonl(stream):
    events = []
    for n, line in enumerate(stream, 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as e:
            raise SystemExit("normalize: line %d: not JSON: %s" % (n, e))
        if not isinstance(ev, dict) or "kind" not in ev:
            raise SystemExit("normalize: line %d: no kind" % n)
        events.append(ev)
    return events


def read_uftrace(datadir):
    """Events from a uftrace data directory, in the jsonl field names."""
    pid_of = {}
    with open(os.path.join(datadir, "task.txt")) as f:
        for line in f:
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            if line.startswith("TASK"):
                pid_of[int(kv["tid"])] = int(kv["pid"])
            elif line.startswith("FORK"):
                pid_of.setdefault(int(kv["pid"]), int(kv["pid"]))
    out = subprocess.run(["uftrace", "dump", "-d", datadir],
                         capture_output=True, text=True, check=True).stdout
    pat = re.compile(r"^\s*([\d.]+)\s+(\d+): \[(entry|exit )\] (.*)\([0-9a-f]+\) depth: (\d+)")
    events = []
    for line in out.splitlines():
        m = pat.match(line)
        if not m:
            continue
        ts, tid, kind, func, depth = m.groups()
        tid = int(tid)
        events.append({"kind": kind.strip(), "pid": pid_of.get(tid, tid), "tid": tid,
                       "ts_ns": int(float(ts) * 1e9), "func": func, "depth": int(depth)})
    return events


def thread_lines(evs, show_events, before_main=False):
    """Normalized lines of one thread's events (in their given order)."""
    has_main = any(e["kind"] == "entry" and clean_name(e.get("func")) == "main" for e in evs)
    started = before_main or not has_main
    cur = 0          # depth of the next entry, from the events seen so far
    skip_at = None   # depth of a dropped toolchain entry: drop what is under it
    lines = []
    for e in evs:
        kind = e["kind"]
        if kind == "entry":
            d = e.get("depth")
            d = cur if d is None else int(d)
            name = clean_name(e.get("func"))
            cur = d + 1
            if not started:
                if name != "main":
                    continue
                started = True
            if skip_at is not None:
                if d > skip_at:
                    continue
                skip_at = None
            if is_toolchain(name, before_main):
                skip_at = d
                continue
            lines.append("  " * d + name)
        elif kind == "exit":
            d = e.get("depth")
            cur = max(cur - 1, 0) if d is None else int(d)
        else:
            if not started or (skip_at is not None and cur > skip_at):
                continue
            if kind == "signal":
                lines.append("  " * cur + "signal " + signame(e.get("signo")))
            elif show_events and kind in PROCESS_KINDS:
                extra = " status=%s" % e["status"] if kind == "process_exit" and "status" in e else ""
                lines.append("  " * cur + kind + extra)
    return lines


def normalize(events, show_events=False, before_main=False, main_only=False):
    procs = {}    # pid -> {tid -> [events]}, insertion order = first appearance
    first_ts = {}
    for i, e in enumerate(events):
        pid, tid = e.get("pid"), e.get("tid")
        procs.setdefault(pid, {}).setdefault(tid, []).append(e)
        ts = e.get("ts_ns", i)
        for key in (("p", pid), ("t", pid, tid)):
            if key not in first_ts or ts < first_ts[key]:
                first_ts[key] = ts
    out = []
    tnum = 0
    if main_only:  # processes that never ran a main (a stripped /bin/sh),
        # but the first one (attach: it was found in the middle of main)
        first = min(procs, key=lambda p: first_ts[("p", p)]) if procs else None
        procs = {p: t for p, t in procs.items()
                 if p == first or any(e["kind"] == "entry" and
                                      clean_name(e.get("func")) == "main"
                                      for evs in t.values() for e in evs)}
    for pnum, pid in enumerate(sorted(procs, key=lambda p: first_ts[("p", p)]), 1):
        threads = []
        for tid, evs in procs[pid].items():
            lines = thread_lines(evs, show_events, before_main)
            main_first = 0 if tid == pid else 1
            threads.append((main_first, "\n".join(lines), first_ts[("t", pid, tid)], lines))
        threads.sort(key=lambda t: t[:3])
        for t in threads:
            tnum += 1
            out.append("== P%d T%d" % (pnum, tnum))
            out.extend(t[3])
    return out


def line_depth(line):
    return (len(line) - len(line.lstrip(" "))) // 2


def cut_from(lines, func):
    """Apply --from FUNC to normalized output lines (see the module doc)."""
    out, body = [], None

    def flush():
        if body is None:
            return
        start = next((i for i, l in enumerate(body)
                      if not l.lstrip().startswith("signal ") and l.strip() == func), None)
        if start is None:
            out.extend(body)
            return
        shift = line_depth(body[start])
        for l in body[start:]:
            d = line_depth(l)
            if d <= shift:      # FUNC, or a line outside the current subtree
                shift = d
            out.append("  " * (d - shift) + l.lstrip(" "))

    for l in lines:
        if l.startswith("== "):
            flush()
            out.append(l)
            body = []
        elif body is None:
            out.append(l)
        else:
            body.append(l)
    flush()
    return out


def main():
    ap = argparse.ArgumentParser(description="Normalize a propel jsonl trace for golden tests.")
    ap.add_argument("input", nargs="?", help="jsonl file (default: stdin)")
    ap.add_argument("--from-uftrace", metavar="DIR", help="read a uftrace data directory instead")
    ap.add_argument("--events", action="store_true",
                    help="also show fork/exec/thread_start/thread_exit/process_exit")
    ap.add_argument("--before-main", action="store_true",
                    help="keep what a thread with main ran before it (constructors)")
    ap.add_argument("--main-only", action="store_true",
                    help="only the first process and those that ran a main "
                         "(drops a stripped shell's)")
    ap.add_argument("--from", dest="from_func", metavar="FUNC",
                    help="keep each thread from FUNC's first entry on, FUNC at depth 0")
    ap.add_argument("--text", action="store_true",
                    help="the input is normalized text (with --from: cut an expected file)")
    args = ap.parse_args()
    try:
        if args.text:
            if args.input and args.input != "-":
                with open(args.input) as f:
                    lines = f.read().splitlines()
            else:
                lines = sys.stdin.read().splitlines()
        elif args.from_uftrace:
            events = read_uftrace(args.from_uftrace)
        elif args.input and args.input != "-":
            with open(args.input) as f:
                events = read_jsonl(f)
        else:
            events = read_jsonl(sys.stdin)
    except (OSError, subprocess.CalledProcessError) as e:
        print("normalize: %s" % e, file=sys.stderr)
        return 1
    try:
        if not args.text:
            lines = normalize(events, args.events, args.before_main, args.main_only)
        if args.from_func:
            lines = cut_from(lines, args.from_func)
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
