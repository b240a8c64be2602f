#!/usr/bin/python3
# tests/real/slowfs.py BACKING MOUNTPOINT DELAY_MS [PATTERN] - a FUSE file
# system (fusepy, libfuse2) that mirrors BACKING read-only and makes every
# read of a file whose name contains PATTERN (default "slow") DELAY_MS
# milliseconds slower: a slow disk or network file system under one file,
# for a real server to serve (tests/e2e/adaptive-real.sh).  The slow files
# are opened direct_io (every read comes here, as from a disk with no
# cache); the others keep the page cache, so once read they cost what a
# local file costs.  Runs in the foreground until unmounted (umount
# MOUNTPOINT); /usr/bin/python3, where Debian's python3-fusepy is.
import errno, os, sys, time
from fusepy import FUSE, FuseOSError, Operations

class Slow(Operations):
    def __init__(self, root, delay, pat):
        self.root, self.delay, self.pat = root, delay, pat

    def _p(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._p(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ('st_atime', 'st_ctime', 'st_gid', 'st_mode',
                                            'st_mtime', 'st_nlink', 'st_size', 'st_uid')}

    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._p(path))

    def open(self, path, fi):
        if fi.flags & (os.O_WRONLY | os.O_RDWR):
            raise FuseOSError(errno.EROFS)
        fi.fh = os.open(self._p(path), os.O_RDONLY)
        # the other files stay in the page cache once read; the slow ones
        # are read from here every time
        fi.keep_cache = 0 if self.pat in os.path.basename(path) else 1
        fi.direct_io = 1 if self.pat in os.path.basename(path) else 0
        return 0

    def read(self, path, size, offset, fi):
        if self.pat in os.path.basename(path):
            time.sleep(self.delay)
        return os.pread(fi.fh, size, offset)

    def release(self, path, fi):
        os.close(fi.fh)
        return 0

if __name__ == '__main__':
    if len(sys.argv) < 4:
        sys.exit("usage: slowfs.py BACKING MOUNTPOINT DELAY_MS [PATTERN]")
    FUSE(Slow(os.path.abspath(sys.argv[1]), float(sys.argv[3]) / 1000.0,
              sys.argv[4] if len(sys.argv) > 4 else 'slow'),
         sys.argv[2], foreground=True, nothreads=False, raw_fi=True, ro=True, allow_other=True)
