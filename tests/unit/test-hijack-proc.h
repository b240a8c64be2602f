/*
 * tests/unit/test-hijack-proc.h - test-hijack's look at a target from
 * /proc: kill it, who traces it, its state, waiting for it to settle.
 * Included by tests/unit/test-hijack.c only (after th_sleep_ms).
 */
static void th_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static pid_t th_tracer(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	pid_t t = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &t) == 1)
			break;
	fclose(f);
	return t;
}

static char th_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	buf[0] = 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

/* A target just let go runs a moment (its interrupted pause restarts):
 * its state once settled, waiting up to 1 s for it to sleep again. */
static char th_settle(pid_t pid)
{
	char st = th_state(pid);

	for (int i = 0; i < 100 && st == 'R'; i++) {
		th_sleep_ms(10);
		st = th_state(pid);
	}
	return st;
}
