#!/usr/bin/env python3
"""tests/real/trace-stats.py - figures of one `propel replay --format=jsonl`
output, for the tests and benchmarks on real software (tests/e2e/real-software.sh).

    trace-stats.py JSONL [--path FROM TO [VIA...]] [--pid P]

Prints one line of key=value pairs:

    events=N entries=N funcs=N maxdepth=N unnamed=N modoff=N named=N

  funcs     distinct `func` values of entry events
  maxdepth  the largest `depth` of an entry event (0 = outermost frame)
  unnamed   distinct functions with no name: empty, or propel's `?@0x...`
  modoff    distinct functions named only `module+0xOFFSET`
  named     distinct functions with a symbol name (funcs - unnamed - modoff)

With --path, a second line: `path=FROM > ... > TO` for the first entry of TO
whose call stack (rebuilt per thread from the depth field) holds FROM, VIA
(each of them) between the two; `path=none (...)` when there is no such
stack.  Exit status 0 unless the input cannot be read or is not JSON lines.
"""
import json
import re
import sys

MODOFF = re.compile(r"^[^?\s]+\+0x[0-9a-fA-F]+$")
# replay's own entry and exit lines, read without json.loads (a trace of
# gzip holds 13 million lines: 82 s through json here); any other line,
# or one whose name holds an escape, goes through json
EVENT = (r'"pid":(\d+),"tid":(\d+),"ts_ns":\d+,"func":"([^"\\]*)",'
         r'"depth":(\d+)[,}]')
FAST = re.compile(r'\{"kind":"(entry|exit)",' + EVENT)
ENTRIES = re.compile(r'\{"kind":"entry",' + EVENT)


def counts_fast(src):
    """The counts alone (no --path, no --pid), in 32 MiB pieces: the
    events are the lines, the entries' names and depths one findall.  None
    when a piece holds a line that is not one object per line, or an entry
    the pattern does not read (an escape in its name): the caller reads
    line by line then."""
    events = entries = 0
    funcs = set()
    maxdepth = -1
    rest = ""
    with open(src, encoding="utf-8", errors="replace") as f:
        while True:
            piece = f.read(32 << 20)
            if not piece:
                break
            piece = rest + piece
            cut = piece.rfind("\n") + 1
            piece, rest = piece[:cut], piece[cut:]
            lines = piece.count("\n")
            # every line one object: begins with { and ends with }
            if piece.count("}\n") != lines or \
                    ("\n" + piece).count("\n{") != lines:
                return None
            found = ENTRIES.findall(piece)
            if len(found) != piece.count('{"kind":"entry",'):
                return None
            events += lines
            entries += len(found)
            for _, _, fn, d in found:
                funcs.add(fn)
            if found:
                maxdepth = max(maxdepth, max(int(x[3]) for x in found))
    if rest.strip():
        return None
    return events, entries, funcs, maxdepth


def stats_line(events, entries, funcs, maxdepth):
    unnamed = sum(1 for x in funcs if not x or x.startswith("?"))
    modoff = sum(1 for x in funcs if x and MODOFF.match(x))
    return ("events=%d entries=%d funcs=%d maxdepth=%d unnamed=%d modoff=%d "
            "named=%d" % (events, entries, len(funcs), maxdepth, unnamed,
                          modoff, len(funcs) - unnamed - modoff))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    src = argv[1]
    path_req = None
    pid_only = None
    i = 2
    while i < len(argv):
        if argv[i] == "--path" and i + 2 < len(argv):
            path_req = argv[i + 1:]
            break
        if argv[i] == "--pid" and i + 1 < len(argv):
            pid_only = int(argv[i + 1])
            i += 2
            continue
        sys.stderr.write("trace-stats: bad argument %s\n" % argv[i])
        return 2
    frm = to = None
    via = []
    if path_req:
        frm, to, via = path_req[0], path_req[1], path_req[2:]

    events = entries = 0
    funcs = set()
    maxdepth = -1
    stacks = {}
    found = None
    near = None  # the best partial path (FROM above TO, VIA missing)
    if to is None and pid_only is None and src != "-":
        fast = counts_fast(src)
        if fast:
            print(stats_line(*fast))
            return 0
    f = sys.stdin if src == "-" else open(src, encoding="utf-8", errors="replace")
    for n, line in enumerate(f, 1):
        m = FAST.match(line)
        if m and line.rstrip().endswith("}"):
            kind, pid, tid, fn, d = m.groups()
            pid, tid, d = int(pid), int(tid), int(d)
        else:
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                sys.stderr.write("trace-stats: line %d is not JSON: %.80s\n" % (n, line))
                return 1
            kind, pid, tid = ev.get("kind"), ev.get("pid"), ev.get("tid")
            fn = ev.get("func") or ""
            d = ev.get("depth", 0)
            if not isinstance(d, int) or d < 0:
                d = 0
        events += 1
        if pid_only is not None and pid != pid_only:
            continue
        if kind not in ("entry", "exit"):
            continue
        if to is None or found is not None:  # no stacks to keep
            if kind == "entry":
                entries += 1
                funcs.add(fn)
                if d > maxdepth:
                    maxdepth = d
            continue
        st = stacks.setdefault((pid, tid), [])
        if kind == "exit":
            del st[d:]
            continue
        entries += 1
        funcs.add(fn)
        maxdepth = max(maxdepth, d)
        del st[d:]
        while len(st) < d:
            st.append("")  # frames above the session's first event
        st.append(fn)
        if fn == to and frm in st[:-1]:
            k = len(st) - 2 - st[:-1][::-1].index(frm)
            seg = st[k:]
            if all(v in seg[1:-1] for v in via):
                found = seg
            elif near is None:
                near = seg
    print(stats_line(events, entries, funcs, maxdepth))
    if to is not None:
        if found:
            print("path=" + " > ".join(x or "?" for x in found))
        else:
            why = []
            for x in [frm, to] + via:
                if x not in funcs:
                    why.append("%s never entered" % x)
            if near:
                why.append("closest: " + " > ".join(x or "?" for x in near))
            elif not why:
                why.append("%s never below %s" % (to, frm))
            print("path=none (%s)" % "; ".join(why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
