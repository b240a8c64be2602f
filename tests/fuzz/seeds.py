#!/usr/bin/env python3
"""tests/fuzz/seeds.py KIND OUT SRC... - make seed inputs for the fuzz
targets (tests/fuzz/fuzz-<KIND>.c) from real recordings, into OUT/:

  ring DIR...      session directories (an agent's rings and map files:
                   LD_PRELOAD=libpropel-agent.so PROPEL_SESSION_DIR=DIR):
                   each ring, cut to 32 records per sub-buffer, with its
                   process's map file (executable paths made absent: the
                   target then does not symbolize libc at every run); a
                   drained copy (keep_all, two sub-buffers of spool) too;
                   the headers' calibration pairs made 60 ms apart
  session DB...    session files, vacuumed
  chunk DB...      each chunk of up to 400 events: its event stream
                   (zstd -d) and, mode 1, its stored body
  wire, directives, opts (no SRC) hand-written: the protocol's
                   conversation, the SPECs of the e2e tests, option values

Seeds keep the input formats of the targets' header comments.
"""
import hashlib, os, re, shutil, sqlite3, struct, subprocess, sys

def put(out, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)

HDR = 4096
def ring_seeds(out, dirs):
    for d in dirs:
        maps = {}
        for n in os.listdir(d):
            if n.endswith('.map'):
                text = open(os.path.join(d, n), 'rb').read()
                # absent executables: no libdw at every run
                text = re.sub(rb'^(P \S+ \S+ \S+ )(.*)$', rb'\1/nonexistent/exe', text, flags=re.M)
                text = re.sub(rb'^(M \S+ \S+ )(.*)$', rb'\1/nonexistent/lib', text, flags=re.M)
                maps[n[:-4]] = text[:4000]
        for n in sorted(os.listdir(d)):
            if not n.endswith('.ring'):
                continue
            raw = open(os.path.join(d, n), 'rb').read()
            key = '.'.join(n.split('.')[:2])
            m = maps.get(key, b'')
            count, recs = struct.unpack_from('<II', raw, 32)
            keep = min(recs, 32)
            hdr = bytearray(raw[:HDR])
            struct.pack_into('<I', hdr, 36, keep)
            # calibration pairs 60 ms apart: else ingest measures the
            # TSC rate itself, sleeping 50 ms a run
            tsc0, mono0 = struct.unpack_from('<QQ', hdr, 48)
            struct.pack_into('<QQ', hdr, 64, tsc0 + 150000000, mono0 + 60000000)
            subs = b''.join(raw[HDR + k * recs * 16: HDR + k * recs * 16 + keep * 16]
                            for k in range(count))
            ring = bytes(hdr) + subs
            put(out, struct.pack('<H', len(m)) + m + ring)
            # drained: keep_all, two sub-buffers spooled, drained = 2
            struct.pack_into('<I', hdr, 616, 1)
            struct.pack_into('<Q', hdr, 624, 2)
            commits = struct.unpack_from('<Q', hdr, 40)[0]
            if commits < 2:
                struct.pack_into('<Q', hdr, 40, 2)
            put(out, struct.pack('<H', len(m)) + m + bytes(hdr) + subs + subs[:2 * keep * 16])

def session_seeds(out, dbs):
    for db in dbs:
        tmp = os.path.join(out, '.tmp.db')
        shutil.copy(db, tmp)
        c = sqlite3.connect(tmp)
        c.execute('VACUUM')
        c.close()
        put(out, open(tmp, 'rb').read())
        os.unlink(tmp)

def chunk_seeds(out, dbs):
    for db in dbs:
        c = sqlite3.connect(db)
        rows = c.execute('SELECT c.count, c.first_seq, c.first_ts, c.kinds, d.body '
                         'FROM chunks c JOIN chunk_data d ON d.id = c.id '
                         'WHERE c.count <= 400').fetchall()
        for count, seq, ts, kinds, body in rows:
            raw = subprocess.run(['zstd', '-dc'], input=body, capture_output=True,
                                 check=True).stdout
            head = lambda mode: struct.pack('<BBHIq', mode, (kinds or 0) & 0xff,
                                            count, seq - 1, ts)
            put(out, head(0) + raw)
            put(out, head(1) + body)

def frame(t, payload):
    return struct.pack('<IHH', len(payload), t, 1) + payload

def wire_seeds(out):
    HELLO, TIME, ATTACH, FOLLOW, RESULT, PEER, PEER_DONE, NOTE, STOP, FILE, DATA, END = range(1, 13)
    coord = [frame(HELLO, b'propel-wire 1 3 enqueue@1,dequeue@ret'), frame(TIME, b''),
             frame(ATTACH, b'1 4242'),
             frame(FOLLOW, b'2 tcp 7f000001 40000 7f000001 8080 1234 0'),
             frame(PEER_DONE, b'3 0'), frame(STOP, b'')]
    daemon = [frame(HELLO, b'propel-wire 1 host1 777 6d1b2c boot /dev/shm/propel/s1 7f000001,0a000002'),
              frame(TIME, b'123456789012'), frame(RESULT, b'1 0 4242 injected'),
              frame(PEER, b'3 tcp 7f000001 40000 0a000003 8080 99 0'),
              frame(NOTE, b'injected 4242 (server)'),
              frame(FILE, b'10 4242.1a.map'), frame(DATA, b'P 4242 1 1'),
              frame(FILE, b'4096 4242.1a.4242.ring'), frame(DATA, b'PRPLRNG1' + bytes(200)),
              frame(END, b'1')]
    for mode in (0, 1, 2, 3, 4, 0x80):
        put(out, bytes([mode]) + b''.join(coord))
        put(out, bytes([mode]) + b''.join(daemon))
    put(out, bytes([3]) + frame(DATA, bytes(5000)) + frame(END, b'0'))
    put(out, bytes([4]) + struct.pack('<IHH', 1 << 20, DATA, 1) + bytes(64))
    put(out, bytes([4]) + frame(HELLO, b'propel-wire 2 x')[:6])

def directive_seeds(out):
    for text in ['enqueue:entry,arg1 -> dequeue:exit,ret',
                 'enqueue:entry,arg0 -> dequeue:exit,ret\nsubmit:entry,arg2 -> run:entry,arg0',
                 'enQ:entry,arg0 -> deQ:exit,ret\nenQ:entry,arg0 -> work:entry,arg0',
                 'enqueue -> dequeue', 'enqueue:entry,argx -> dequeue:exit,ret',
                 'enqueue:entry', 'enqueue:exit,arg1 -> dequeue:exit,ret',
                 '# a comment\n\nenqueue:entry,arg0 -> worker:exit,ret\n',
                 'ns::Q::push(int):entry,arg5 -> ns::Q::pop():exit,ret']:
        put(out, text.encode())

def opts_seeds(out):
    for text in ['64', '32768', '67108864', '67108865', '63', '-64', '+64', '0x40',
                 '99999999999999999999999', '64k', '', 'full', 'flight', 'exact',
                 'sampled', 'all', 'step', 'reverse-step', 'finish', 'calls', 'time']:
        put(out, text.encode())

kind, out, srcs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(out, exist_ok=True)
{'ring': lambda: ring_seeds(out, srcs), 'session': lambda: session_seeds(out, srcs),
 'chunk': lambda: chunk_seeds(out, srcs), 'wire': lambda: wire_seeds(out),
 'directives': lambda: directive_seeds(out),
 'opts': lambda: opts_seeds(out)}[kind]()
