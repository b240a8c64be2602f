/*
 * tests/unit/test-hijack-late.h - test-hijack's "late" case: an injector
 * late for the agent's pad must leave the call thread's stack alone.
 * Included by tests/unit/test-hijack.c only (after th_spawn, th_kill and
 * th_case_dies' way of finding the real agent).
 *
 * A call into the agent returns into its pad (propel_agent_return), which
 * says "done" and, if the injector has not taken the thread within about
 * 0.4 s (1e9 TSC cycles), puts it back itself with the signal frame below the call
 * (inject/hijack-ret.c).  On a loaded machine the injector can be that
 * late (propel starved of CPU beside make test J=2): the thread has gone
 * on with the program by the time it is taken back, its new frames where
 * the call's frame and staged bytes were.  hijack_call wrote the old
 * bytes back there -- over live return addresses: spin's worker jumped
 * to the base of its stack mapping (capture attach/200-cycles) and
 * nginx's to 0.  Here the injector is made late by stopping it
 * (SIGSTOP) for 1.5 s; deep.c's worker, armed by the call, is 200 frames
 * below the call's sp when it is taken back, and checks every frame on
 * its way up 3 s later.
 */
static void th_case_late(void)
{
	const char *o = getenv("O") ? getenv("O") : "build";
	char so[PATH_MAX + 64], dir[128], why[512], exe[PATH_MAX + 16];
	char out[PATH_MAX + 32], line[256], *cause = NULL;
	char *argv[] = { exe, NULL };
	unsigned long tick = 0, deep = 0;
	int pp[2], st = 0, err = 0;
	pid_t pid, tr = -1;
	char c;
	FILE *f;

	if (o[0] == '/')
		snprintf(so, sizeof(so), "%s/libpropel-agent.so", o);
	else
		snprintf(so, sizeof(so), "%s/%s/libpropel-agent.so", th_top, o);
	snprintf(exe, sizeof(exe), "%s/deep", th_fix);
	snprintf(out, sizeof(out), "%s/deep.out", th_tmp);
	snprintf(dir, sizeof(dir), "/dev/shm/propel/test-hijack-late-%d",
		 getpid());
	if (CHECK_SH("gcc -O2 -pthread -rdynamic -o %s %s/tests/fixtures/hijack/deep.c",
		  exe, th_top)) {
		th_fail("late", "cannot build %s", exe);
		return;
	}
	CHECK_SH("mkdir -p %s", dir);
	pid = th_spawn(argv, out);
	th_sleep_ms(100);
	/* the real agent loaded and switched off, for its pad */
	if (pid <= 0 || inject_agent_start(pid, so, dir, 0, &cause) ||
	    inject_agent_stop(pid, &cause) < 0) {
		th_fail("late", "agent: %s", cause ? cause : "cannot start deep");
		goto out;
	}
	if (pipe(pp)) {
		th_fail("late", "pipe");
		goto out;
	}
	tr = fork();
	if (tr == 0) {
		struct hijack *h = NULL;
		struct propel_thread_hint *hints = NULL, back;
		uint64_t fn, pad, res, ret;
		size_t n = 0, i;

		close(pp[0]);
		if (hijack_attach(pid, &h, NULL) || hijack_threads(h, &hints, &n))
			_exit(2);
		for (i = 0; i < n; i++) /* the worker, in user code */
			if (hints[i].sys == -1 &&
			    !hijack_set_call_thread(h, hints[i].tid))
				break;
		if (i == n)
			_exit(8);
		if (hijack_sym(h, so, PROPEL_AGENT_RETURN_SYM, &pad, &cause) ||
		    hijack_sym(h, so, PROPEL_AGENT_RESULT_SYM, &res, &cause) ||
		    hijack_sym(h, exe, "deep_arm", &fn, &cause)) {
			printf("# %s\n", cause ? cause : "?");
			_exit(3);
		}
		hijack_set_return(h, pad, res);
		if (write(pp[1], "g", 1) != 1)
			_exit(4);
		if (hijack_call(h, fn, NULL, 0, 0, &ret, NULL))
			_exit(5);
		/* 7: taken back in the pad, the case could not tell */
		if (hijack_call_thread_hint(h, &back) ||
		    (back.pc >= pad && back.pc < pad + HIJACK_PAD_SIZE))
			_exit(7);
		_exit(hijack_detach(h) ? 6 : 0);
	}
	close(pp[1]);
	if (tr < 0 || read(pp[0], &c, 1) != 1) {
		close(pp[0]);
		if (tr > 0)
			waitpid(tr, &st, 0);
		tr = -1;
		th_fail("late", "the injector did not start the call (%#x)", st);
		goto out;
	}
	close(pp[0]);
	th_sleep_ms(10); /* into deep_arm's 50 ms */
	kill(tr, SIGSTOP);
	th_sleep_ms(1500); /* the pad gives up, the worker goes down */
	kill(tr, SIGCONT);
	waitpid(tr, &st, 0);
	tr = -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		th_fail("late", "injector status %#x%s", st,
			WIFEXITED(st) && WEXITSTATUS(st) == 7
				? " (the thread waited in the pad: the case "
				  "cannot tell)"
				: "");
		goto out;
	}
	/* the worker comes up 3 s after it went down, checking each frame */
	for (int k = 0; k < 120 && deep == 0 && !err; k++) {
		th_sleep_ms(50);
		f = fopen(out, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "ERROR", 5)) {
				snprintf(why, sizeof(why), "deep said: %.200s", line);
				why[strcspn(why, "\n")] = 0;
				err = 1;
			}
			sscanf(line, "tick %lu deep %lu", &tick, &deep);
		}
		if (f)
			fclose(f);
		if (!err && waitpid(pid, &st, WNOHANG) == pid) {
			snprintf(why, sizeof(why), "deep died (status %#x)", st);
			pid = -1;
			err = 1;
		}
	}
	if (err)
		th_fail("late", "%s", why);
	else if (deep == 0)
		th_fail("late", "the worker did not come up in 6 s (tick %lu)",
			tick);
	else
		th_pass("late");
out:
	if (tr > 0) {
		kill(tr, SIGKILL);
		waitpid(tr, NULL, 0);
	}
	free(cause);
	th_kill(pid);
	CHECK_SH("rm -rf %s", dir);
}
