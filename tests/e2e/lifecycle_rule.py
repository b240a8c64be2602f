# tests/e2e/lifecycle_rule.py - the set-up and tear-down rule of
# analysis/lifecycle.c (README: "Set-up and tear-down are no request's"),
# read independently from a replay JSONL, for the checkers that rebuild
# flows by hand (report-check.py, directives-check.py).


def lifecycle(evs):
    """Per event: is it its process's set-up or tear-down?  Per thread and
    image (split at exec): before the first entry of main; after main's
    return, an entry of exit/quick_exit/_exit/_Exit, or process_exit (an
    exit call right after it ends it instead)."""
    enders = ("exit", "quick_exit", "_exit", "_Exit")
    life = [False] * len(evs)
    threads = {}
    for i, e in enumerate(evs):
        threads.setdefault((e["pid"], e["tid"]), []).append(i)
    for idx in threads.values():
        images, cur = [], []
        for i in idx:
            if evs[i]["kind"] == "exec":
                images.append(cur)
                cur = []
            else:
                cur.append(i)
        images.append(cur)
        for img in images:
            mains = [p for p, i in enumerate(img) if evs[i]["kind"] == "entry"
                     and evs[i].get("func") == "main"]
            for p in range(mains[0] if mains else 0):
                life[img[p]] = True
            end = len(img)
            for p, i in enumerate(img):
                e = evs[i]
                if e["kind"] == "entry" and e.get("func") in enders:
                    end = p
                elif e["kind"] == "exit" and e.get("func") == "main" and (
                        not mains or (p > mains[0] and
                                      e["depth"] <= evs[img[mains[0]]]["depth"])):
                    end = p
                elif e["kind"] == "process_exit":
                    nx = evs[img[p + 1]] if p + 1 < len(img) else {}
                    end = p + 1 if (nx.get("kind") == "entry" and
                                    nx.get("func") in enders) else p
                else:
                    continue
                break
            for p in range(end + 1, len(img)):
                life[img[p]] = True
    return life
