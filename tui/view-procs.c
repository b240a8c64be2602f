/*
 * tui/view-procs.c - the live console's process view (`propel`, `propel
 * top`): this node's processes, one line each, like htop and csysdig.
 *
 *     PID USER      THR   CPU%  OFF%  SYS/s WAITING      COMMAND
 *    4242 alice       4   37.5  90.6  12.3k sock recvfrom ./dist-back
 *       2 root        1    0.0 100.0 [kthreadd]  (kernel thread)  <- dimmed
 *
 * Figures come from /proc (share/procs.h) once a second (the core's tick,
 * TUI_TICK_MS): CPU% is the process's utime + stime over the last tick,
 * as top counts it (100 = one core); "-" until a rate can be measured
 * (the first screen, up to the first tick 250 ms later; a new process).  Busiest first (ties: the
 * processes propel may trace, then lower pid);
 * the selection follows its pid across refreshes.  `/ TEXT` keeps the
 * lines that hold TEXT (any case; `/` alone: all again).
 *
 * Processes propel may not trace are dimmed with the reason: a kernel
 * thread, a zombie, propel itself and its ancestors (stopping one would
 * stop propel), another user's without CAP_SYS_PTRACE, and what Yama's
 * ptrace_scope forbids.
 *
 * OFF% is the share of its threads' time off the CPU over the last tick
 * (100 - CPU% / threads, /proc); WAITING what held most of that time
 * and SYS/s its system calls per second: the kernel's view of the core
 * (engine/node-vitals.h: BPF over every process where it is allowed;
 * without it WAITING comes from /proc/PID/syscall alone, SYS/s is "-",
 * and the status line says what is missing and why).
 *
 * `a` attaches to the selected process, `A` with --follow, through the
 * core's view_attach() (tui/tui.c tui_attach: the capture run of
 * tui/live.c, its pane tui/view-live.c); a refusal goes on the message
 * line in one line.
 *
 * Cost: one pass reads /proc/PID/stat of every process; its command line
 * once per process (pid + start time), its owner at first sight and
 * every PROCS_UID_EVERY passes: about 0.4%
 * of a core with 190 processes, 0.8% with 500.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/node-vitals.h"
#include "share/clock.h"
#include "share/proc.h"
#include "share/procs.h"
#include "tui/screen.h"
#include "tui/view.h"

#define PROCS_CMDLINE 512
#define PROCS_NUSERS 64
#define CAP_SYS_PTRACE 19
#define PROCS_UID_EVERY 8 /* passes between two reads of the owners */
#define PROCS_HEADER \
	"    PID USER      THR   CPU%  OFF%  SYS/s WAITING      COMMAND"

struct proc_row {
	struct procs_stat st;
	int uid;
	double cpu;          /* % of one core over the last tick; <0 unknown */
	char *cmd;           /* malloc'd: the command line, or [comm] */
	const char *why_not; /* why propel may not trace it, or NULL */
	double gone_at;      /* when it was last seen, if it has exited */
};

struct procs {
	struct proc_row *rows; /* by pid (ascending) */
	int n;
	int *order; /* indexes into rows: shown, sorted by CPU */
	int nshown;
	int sel;     /* index into order */
	int sel_pid; /* the selection's pid, kept across refreshes */
	int top;     /* first shown line */
	int page;    /* lines in the last draw */
	double t_sample;
	unsigned npass; /* passes over /proc so far */
	long hz;
	char filter[128];
	int myuid, cap_ptrace, scope;
	int *ancestors; /* propel and its parents up to init */
	int nancestors;
	struct {
		int uid;
		char name[16];
	} users[PROCS_NUSERS];
	int nusers;
};

static double mono_s(void)
{
	return propel_mono_s();
}

static const char *procs_user(struct procs *p, int uid)
{
	struct passwd *pw;
	int i;

	for (i = 0; i < p->nusers; i++)
		if (p->users[i].uid == uid)
			return p->users[i].name;
	i = p->nusers < PROCS_NUSERS ? p->nusers++ : PROCS_NUSERS - 1;
	p->users[i].uid = uid;
	pw = getpwuid((uid_t)uid);
	if (pw)
		snprintf(p->users[i].name, sizeof(p->users[i].name), "%s",
			 pw->pw_name);
	else
		snprintf(p->users[i].name, sizeof(p->users[i].name), "%d", uid);
	return p->users[i].name;
}

static int procs_is_ancestor(const struct procs *p, int pid)
{
	int i;

	for (i = 0; i < p->nancestors; i++)
		if (p->ancestors[i] == pid)
			return 1;
	return 0;
}

/* 1 when pid descends from propel (Yama's scope 1 lets it be traced) */
static int procs_descends(const struct proc_row *rows, int n, int pid,
			  int me)
{
	int depth, lo, hi, mid;

	for (depth = 0; depth < 64 && pid > 1; depth++) {
		if (pid == me)
			return 1;
		lo = 0;
		hi = n - 1;
		while (lo <= hi) {
			mid = (lo + hi) / 2;
			if (rows[mid].st.pid == pid)
				break;
			if (rows[mid].st.pid < pid)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (lo > hi)
			return 0;
		pid = rows[mid].st.ppid;
	}
	return 0;
}

static const char *procs_why_not(const struct procs *p,
				 const struct proc_row *rows, int n,
				 const struct proc_row *r)
{
	if (r->st.flags & PROPEL_PF_KTHREAD || r->st.pid == 2 ||
	    r->st.ppid == 2)
		return "kernel thread";
	if (r->st.state == 'Z' || r->st.state == 'X')
		return "zombie: exited";
	if (r->st.pid == getpid())
		return "propel itself";
	if (procs_is_ancestor(p, r->st.pid))
		return "propel's ancestor";
	if (p->cap_ptrace)
		return NULL;
	if (p->scope >= 3)
		return "ptrace off (ptrace_scope 3)";
	if (p->scope == 2)
		return "needs CAP_SYS_PTRACE (ptrace_scope 2)";
	if (r->uid != p->myuid)
		return "another user's: needs root";
	if (p->scope == 1 && !procs_descends(rows, n, r->st.pid, getpid()))
		return "not propel's child (ptrace_scope 1)";
	return NULL;
}

static struct proc_row *procs_find(struct proc_row *rows, int n, int pid)
{
	int lo = 0, hi = n - 1, mid;

	while (lo <= hi) {
		mid = (lo + hi) / 2;
		if (rows[mid].st.pid == pid)
			return &rows[mid];
		if (rows[mid].st.pid < pid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

static void procs_free_rows(struct proc_row *rows, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(rows[i].cmd);
	free(rows);
}

static struct procs *procs_cmp_ctx;

static int procs_cmp(const void *a, const void *b)
{
	const struct proc_row *x = &procs_cmp_ctx->rows[*(const int *)a];
	const struct proc_row *y = &procs_cmp_ctx->rows[*(const int *)b];

	if (!x->gone_at != !y->gone_at) /* an exited line below the live */
		return x->gone_at ? 1 : -1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? 1 : -1;
	/* on an idle node most lines tie at 0.0: the ones propel may trace
	 * first, not a screenful of kernel threads */
	if (!x->why_not != !y->why_not)
		return x->why_not ? 1 : -1;
	return x->st.pid - y->st.pid;
}

static int procs_matches(struct procs *p, const struct proc_row *r)
{
	char pid[16];

	if (!p->filter[0])
		return 1;
	snprintf(pid, sizeof(pid), "%d", r->st.pid);
	return strcasestr(r->cmd, p->filter) || strcasestr(pid, p->filter) ||
	       strcasestr(procs_user(p, r->uid), p->filter);
}

/* the shown lines, busiest first; the selection stays on its pid */
static void procs_order(struct procs *p)
{
	int i;

	p->nshown = 0;
	for (i = 0; i < p->n; i++)
		if (procs_matches(p, &p->rows[i]))
			p->order[p->nshown++] = i;
	procs_cmp_ctx = p;
	qsort(p->order, p->nshown, sizeof(*p->order), procs_cmp);
	for (i = 0; i < p->nshown; i++)
		if (p->rows[p->order[i]].st.pid == p->sel_pid) {
			p->sel = i;
			return;
		}
	if (p->sel >= p->nshown)
		p->sel = p->nshown - 1;
	if (p->sel < 0)
		p->sel = 0;
	p->sel_pid = p->nshown ? p->rows[p->order[p->sel]].st.pid : 0;
}

static int procs_pid_cmp(const void *a, const void *b)
{
	return ((const struct proc_row *)a)->st.pid -
	       ((const struct proc_row *)b)->st.pid;
}

/*
 * A process that exited stays on its line, dimmed "exited", for
 * PROCS_GONE_S (as htop shows one that just ended): the line under the
 * operator's cursor does not vanish between a look and a key, and `a` on
 * it says why nothing was attached.  The old rows not in rows[0..k) are
 * moved over; rows is kept by pid.  Returns the new count.
 */
#define PROCS_GONE_S 2.0
static int procs_keep_gone(struct procs *p, struct proc_row **rowsp,
			   int **orderp, int k, double now)
{
	struct proc_row *rows = *rowsp, *grown;
	int i, ngone = 0, *order;

	for (i = 0; i < p->n; i++) {
		struct proc_row *o = &p->rows[i], *r;

		if (!o->cmd)
			continue; /* still there: its line moved on */
		r = procs_find(rows, k, o->st.pid);
		if (r && r->st.starttime == o->st.starttime)
			continue;
		if (!o->gone_at)
			o->gone_at = now;
		if (now - o->gone_at < PROCS_GONE_S)
			ngone++;
	}
	if (!ngone)
		return k;
	grown = realloc(rows, (size_t)(k + ngone) * sizeof(*rows));
	order = realloc(*orderp, (size_t)(k + ngone) * sizeof(*order));
	if (grown)
		*rowsp = rows = grown;
	if (order)
		*orderp = order;
	if (!grown || !order)
		return k;
	for (i = 0; i < p->n; i++) {
		struct proc_row *o = &p->rows[i], *r;

		if (!o->cmd || !o->gone_at || now - o->gone_at >= PROCS_GONE_S)
			continue;
		r = procs_find(rows, k, o->st.pid);
		if (r && r->st.starttime == o->st.starttime)
			continue;
		rows[k] = *o;
		rows[k].cpu = 0;
		rows[k].why_not = "exited";
		o->cmd = NULL;
		k++;
	}
	qsort(rows, (size_t)k, sizeof(*rows), procs_pid_cmp);
	return k;
}

/* one pass over /proc: new rows, CPU% against the last pass */
static int procs_sample(struct procs *p)
{
	struct proc_row *rows, *old;
	int *pids = NULL, n, i, k = 0, *order;
	double now = mono_s(), dt = now - p->t_sample;
	char buf[PROCS_CMDLINE];

	n = procs_pids(&pids);
	if (n < 0)
		return n;
	rows = calloc(n ? n : 1, sizeof(*rows));
	order = calloc(n ? n : 1, sizeof(*order));
	if (!rows || !order) {
		free(rows);
		free(order);
		free(pids);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct proc_row *r = &rows[k];

		if (procs_stat_read(pids[i], &r->st))
			continue; /* gone meanwhile */
		old = procs_find(p->rows, p->n, pids[i]);
		if (old && old->st.starttime != r->st.starttime)
			old = NULL; /* a new process under a reused pid */
		/* an owner rarely changes (a daemon's setuid at its start): read
		 * at first sight, then every PROCS_UID_EVERY passes */
		r->uid = old && p->npass % PROCS_UID_EVERY ? old->uid
							   : procs_uid(pids[i]);
		if (r->uid < 0)
			continue;
		if (old) {
			r->cpu = dt > 0 && r->st.ticks >= old->st.ticks
					 ? (r->st.ticks - old->st.ticks) * 100.0 /
						   (dt * p->hz)
					 : 0;
			r->cmd = old->cmd; /* the same process: same line */
			old->cmd = NULL;
		} else {
			r->cpu = -1;
		}
		if (!r->cmd) {
			if (procs_cmdline(pids[i], buf, sizeof(buf)) > 0)
				r->cmd = strdup(buf);
			else {
				snprintf(buf, sizeof(buf), "[%s]", r->st.comm);
				r->cmd = strdup(buf);
			}
			if (!r->cmd)
				continue;
		}
		k++;
	}
	free(pids);
	for (i = 0; i < k; i++)
		rows[i].why_not = procs_why_not(p, rows, k, &rows[i]);
	k = procs_keep_gone(p, &rows, &order, k, now);
	procs_free_rows(p->rows, p->n);
	free(p->order);
	p->rows = rows;
	p->n = k;
	p->order = order;
	p->t_sample = now;
	p->npass++;
	procs_order(p);
	return 0;
}

static int procs_open(struct view *v, char **cause)
{
	struct procs *p = calloc(1, sizeof(*p));
	struct procs_stat st;
	int pid, err;

	if (!p)
		return -ENOMEM;
	v->priv = p;
	p->hz = sysconf(_SC_CLK_TCK);
	if (p->hz <= 0)
		p->hz = 100;
	p->myuid = (int)geteuid();
	p->cap_ptrace = procs_have_cap(CAP_SYS_PTRACE);
	p->scope = procs_ptrace_scope();
	for (pid = getpid(); pid > 0 && p->nancestors < 64;) {
		int *a = realloc(p->ancestors, (p->nancestors + 1) * sizeof(*a));

		if (!a)
			break;
		p->ancestors = a;
		p->ancestors[p->nancestors++] = pid;
		if (pid == 1 || procs_stat_read(pid, &st))
			break;
		pid = st.ppid;
	}
	/* CPU% shows "-" until the core's first tick (TUI_FIRST_TICK_MS)
	 * measures it: the first screen does not wait for it */
	p->t_sample = mono_s();
	err = procs_sample(p);
	if (err) {
		*cause = strdup("cannot read /proc");
		return err;
	}
	return 0;
}

static void procs_free(struct view *v)
{
	struct procs *p = v->priv;

	if (!p)
		return;
	procs_free_rows(p->rows, p->n);
	free(p->order);
	free(p->ancestors);
	free(p);
	v->priv = NULL;
}

static void procs_tick(struct view *v)
{
	struct procs *p = v->priv;

	if (procs_sample(p))
		screen_error("cannot read /proc");
}

/* A command line too long for room columns loses the directory of its
 * program (/usr/lib/x/prog -a -> prog -a), as the name says the most. */
static const char *procs_fit(const char *cmd, int room)
{
	const char *sp, *sl;

	if ((int)strlen(cmd) <= room || cmd[0] == '[')
		return cmd;
	sp = strchr(cmd, ' ');
	if (!sp)
		sp = cmd + strlen(cmd);
	for (sl = sp; sl > cmd && sl[-1] != '/'; sl--)
		;
	return sl;
}

void view_procs_figures(double pcpu, int nthreads,
			const struct node_vital *nvl, char *cpu, char *off,
			char *sys, size_t n)
{
	double o;

	if (pcpu < 0 || nthreads <= 0) {
		snprintf(cpu, n, "     -");
		snprintf(off, n, "    -");
	} else {
		o = 100.0 - pcpu / nthreads;
		snprintf(cpu, n, "%6.1f", pcpu);
		snprintf(off, n, "%5.1f", o < 0 ? 0 : o);
	}
	if (nvl->syscalls_s < 0)
		snprintf(sys, n, "     -");
	else if (nvl->syscalls_s < 100000)
		snprintf(sys, n, "%6.0f", nvl->syscalls_s);
	else if (nvl->syscalls_s < 1e7)
		snprintf(sys, n, "%5.0fk", nvl->syscalls_s / 1e3);
	else
		snprintf(sys, n, "%5.0fM", nvl->syscalls_s / 1e6);
}

static void procs_draw(struct view *v, const struct screen_rect *r,
		       int focused)
{
	struct procs *p = v->priv;
	int row, i, w;

	screen_clear_row(r, 0, 0, SA_BOLD | SA_UNDERLINE);
	screen_put(r, 0, 0, SA_BOLD | SA_UNDERLINE, PROCS_HEADER);
	p->page = r->h - 1 > 1 ? r->h - 1 : 1;
	if (p->sel < p->top)
		p->top = p->sel;
	if (p->sel >= p->top + p->page)
		p->top = p->sel - p->page + 1;
	if (p->top > p->nshown - p->page)
		p->top = p->nshown - p->page > 0 ? p->nshown - p->page : 0;
	if (!p->nshown)
		screen_put(r, 1, 2, SA_DIM,
			   p->filter[0] ? "no process matches the filter "
					  "(/ alone shows all)"
					: "no processes");
	for (row = 1, i = p->top; i < p->nshown && row < r->h; i++, row++) {
		const struct proc_row *pr = &p->rows[p->order[i]];
		int attr = pr->why_not ? SA_DIM : SA_NORMAL;
		char head[96], cpu[16], off[16], sys[16], cmd[PROCS_CMDLINE + 80];
		struct node_vital nvl;
		const char *c;
		int room;

		if (i == p->sel && focused)
			attr = SA_REVERSE | (pr->why_not ? SA_DIM : 0);
		/* a kernel thread is in no system call */
		node_vitals_get(view_node_vitals(v), pr->st.pid,
				pr->st.flags & PROPEL_PF_KTHREAD ? 0
								 : pr->st.state,
				&nvl);
		view_procs_figures(pr->cpu, pr->st.nthreads, &nvl, cpu, off,
				   sys, sizeof(cpu));
		/* a line propel may not trace gives SYS/s's and WAITING's
		 * room to its reason: at 80 columns they would not fit */
		if (pr->why_not)
			snprintf(head, sizeof(head), "%7d %-8.8s %4d %s %s ",
				 pr->st.pid, procs_user(p, pr->uid),
				 pr->st.nthreads, cpu, off);
		else
			snprintf(head, sizeof(head),
				 "%7d %-8.8s %4d %s %s %s %-12.12s ", pr->st.pid,
				 procs_user(p, pr->uid), pr->st.nthreads, cpu,
				 off, sys, nvl.why);
		w = screen_strwidth(head);
		room = r->w - w;
		c = procs_fit(pr->cmd, room - (pr->why_not
							? (int)strlen(pr->why_not) + 4
							: 0));
		if (pr->why_not) {
			/* the reason stays in view: the command line gives way */
			int cw = room - (int)strlen(pr->why_not) - 4;

			if (cw < 8)
				cw = 8;
			snprintf(cmd, sizeof(cmd), "%.*s  (%s)", cw, c,
				 pr->why_not);
		} else {
			snprintf(cmd, sizeof(cmd), "%s", c);
		}
		screen_clear_row(r, row, 0, attr);
		screen_put(r, row, 0, attr, head);
		screen_put(r, row, w, attr, cmd);
	}
}

static void procs_move(struct procs *p, int to)
{
	if (to >= p->nshown)
		to = p->nshown - 1;
	if (to < 0)
		to = 0;
	p->sel = to;
	p->sel_pid = p->nshown ? p->rows[p->order[to]].st.pid : 0;
}

static int procs_key(struct view *v, int key)
{
	struct procs *p = v->priv;
	const struct proc_row *pr;
	char *cause = NULL;

	switch (key) {
	case SCREEN_KEY_UP: procs_move(p, p->sel - 1); return 1;
	case SCREEN_KEY_DOWN: procs_move(p, p->sel + 1); return 1;
	case SCREEN_KEY_PGUP: procs_move(p, p->sel - p->page); return 1;
	case SCREEN_KEY_PGDN: procs_move(p, p->sel + p->page); return 1;
	case SCREEN_KEY_HOME: procs_move(p, 0); return 1;
	case SCREEN_KEY_END: procs_move(p, p->nshown - 1); return 1;
	case 'a':
	case 'A':
		if (!p->nshown) {
			screen_error("no process selected");
			return 1;
		}
		pr = &p->rows[p->order[p->sel]];
		if (pr->why_not) {
			screen_error("cannot attach to %d (%s): %s", pr->st.pid,
				     pr->st.comm, pr->why_not);
			return 1;
		}
		if (view_attach(v, pr->st.pid, pr->st.comm, key == 'A', &cause))
			screen_error("%s", cause ? cause : "attach failed");
		free(cause);
		return 1;
	}
	return 0;
}

static void procs_search(struct view *v, const char *text)
{
	struct procs *p = v->priv;

	snprintf(p->filter, sizeof(p->filter), "%s", text);
	p->sel = 0;
	p->sel_pid = 0;
	p->top = 0;
	procs_order(p);
	if (p->filter[0])
		screen_message("%d of %d processes match \"%s\" (/ alone: all)",
			       p->nshown, p->n, p->filter);
}

static void procs_status(struct view *v, char *buf, int size)
{
	struct procs *p = v->priv;
	const char *m;
	int len;

	len = snprintf(buf, size, " %d procs", p->n);
	if (p->filter[0] && len < size)
		len += snprintf(buf + len, size - len, ", %d match /%.16s%s",
				p->nshown, p->filter,
				strlen(p->filter) > 16 ? "..." : "");
	m = node_vitals_missing(view_node_vitals(v));
	if (len < size && m)
		snprintf(buf + len, size - len,
			 "  vital signs: /proc only (%s): no SYS/s", m);
	else if (len < size)
		snprintf(buf + len, size - len,
			 "  vital signs: BPF (off-CPU spans, syscalls)");
}

const struct view_ops view_procs_ops = {
	.name = "procs",
	.title = "processes by CPU (/proc, every second)",
	.help = "Up/Down select, / filter, a attach, A attach --follow",
	.open = procs_open,
	.free = procs_free,
	.draw = procs_draw,
	.key = procs_key,
	.tick = procs_tick,
	.status = procs_status,
	.search = procs_search,
};
