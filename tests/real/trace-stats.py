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
    f = sys.stdin if src == "-" else open(src, encoding="utf-8", errors="replace")
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            sys.stderr.write("trace-stats: line %d is not JSON: %.80s\n" % (n, line))
            return 1
        events += 1
        if pid_only is not None and ev.get("pid") != pid_only:
            continue
        kind = ev.get("kind")
        if kind not in ("entry", "exit"):
            continue
        key = (ev.get("pid"), ev.get("tid"))
        st = stacks.setdefault(key, [])
        d = ev.get("depth", 0)
        if not isinstance(d, int) or d < 0:
            d = 0
        if kind == "exit":
            del st[d:]
            continue
        entries += 1
        fn = ev.get("func") or ""
        funcs.add(fn)
        maxdepth = max(maxdepth, d)
        del st[d:]
        while len(st) < d:
            st.append("")  # frames above the session's first event
        st.append(fn)
        if to is not None and found is None and fn == to and frm in st[:-1]:
            k = len(st) - 2 - st[:-1][::-1].index(frm)
            seg = st[k:]
            if all(v in seg[1:-1] for v in via):
                found = seg
            elif near is None:
                near = seg
    unnamed = sum(1 for x in funcs if not x or x.startswith("?"))
    modoff = sum(1 for x in funcs if x and MODOFF.match(x))
    print("events=%d entries=%d funcs=%d maxdepth=%d unnamed=%d modoff=%d named=%d"
          % (events, entries, len(funcs), maxdepth, unnamed, modoff,
             len(funcs) - unnamed - modoff))
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
