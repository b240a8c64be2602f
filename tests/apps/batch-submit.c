/*
 * tests/apps/batch-submit.c - condor_submit of the batch system
 * (tests/apps/batch.h): builds the ad of each job of one cluster from a
 * submit description, sends them to batch-schedd over TCP, then waits for
 * one notice per job.
 *
 *   batch-submit SCHEDD_ADDR:PORT NJOBS OUTDIR
 *
 * Attributes live in two tables, as in condor_submit: the cluster's
 * (shared by every job: set once, a later insert finds it already there)
 * and the job's (set for every job).  The output file must be per job;
 * with BATCH_FAULT=perbatch set_transfer_files registers it in the
 * cluster's table, so every job after the first keeps the first job's
 * file.  Prints "job P: STATUS runs R value V out FILE" per notice, and
 * "cluster C: N done" at the end; exits 0 when every job was done.
 */
#include "tests/apps/batch.h"

#define NATTR 16

struct attr_table {
	char name[NATTR][16];
	char val[NATTR][160];
	int n;
};

static struct attr_table cluster_attrs, job_attrs;
static int fault;
static const char *outdir;
static volatile int sink;

static __attribute__((noinline)) int attr_hash(const char *s)
{
	unsigned h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return (int)(h % NATTR);
}

static __attribute__((noinline)) int attr_table_lookup(struct attr_table *t,
							const char *name)
{
	int i;

	sink += attr_hash(name);
	for (i = 0; i < t->n; i++)
		if (strcmp(t->name[i], name) == 0)
			return i;
	return -1;
}

static __attribute__((noinline)) void attr_table_insert(struct attr_table *t,
							 const char *name,
							 const char *val)
{
	int i = attr_table_lookup(t, name);

	if (i < 0) {
		if (t->n == NATTR)
			batch_die("too many attributes (%s)", name);
		i = t->n++;
	}
	snprintf(t->name[i], sizeof(t->name[i]), "%s", name);
	snprintf(t->val[i], sizeof(t->val[i]), "%s", val);
}

static __attribute__((noinline)) void attr_already_set(const char *name)
{
	sink += (int)strlen(name);
}

/* a per-cluster attribute: the first job sets it, later ones find it */
static __attribute__((noinline)) void insert_cluster_expr(const char *name,
							   const char *val)
{
	if (attr_table_lookup(&cluster_attrs, name) >= 0)
		attr_already_set(name);
	else
		attr_table_insert(&cluster_attrs, name, val);
}

static __attribute__((noinline)) void insert_job_expr(const char *name,
						       const char *val)
{
	attr_table_insert(&job_attrs, name, val);
}

static __attribute__((noinline)) void set_job_attrs(int proc)
{
	char v[16];

	insert_cluster_expr("Owner", "batch");
	insert_cluster_expr("Cmd", "checksum");
	snprintf(v, sizeof(v), "%d", 1000 + proc * 17);
	insert_job_expr("Args", v);
}

static __attribute__((noinline)) void set_transfer_files(int proc)
{
	char out[160];

	insert_cluster_expr("TransferMode", "on_exit");
	snprintf(out, sizeof(out), "%s/job.%d.out", outdir, proc);
	if (fault == BF_PERBATCH)
		insert_cluster_expr("Out", out); /* the bug */
	else
		insert_job_expr("Out", out);
}

static __attribute__((noinline)) const char *
attr_value(const char *name)
{
	int i = attr_table_lookup(&job_attrs, name);

	if (i >= 0)
		return job_attrs.val[i];
	i = attr_table_lookup(&cluster_attrs, name);
	return i >= 0 ? cluster_attrs.val[i] : "";
}

static __attribute__((noinline)) void build_ad(struct batch_ad *ad, int proc)
{
	memset(ad, 0, sizeof(*ad));
	ad->magic = BATCH_MAGIC;
	ad->cluster = 1;
	ad->proc = proc;
	ad->arg = atoi(attr_value("Args"));
	snprintf(ad->owner, sizeof(ad->owner), "%s", attr_value("Owner"));
	snprintf(ad->cmd, sizeof(ad->cmd), "%s", attr_value("Cmd"));
	snprintf(ad->out, sizeof(ad->out), "%s", attr_value("Out"));
}

/* one job: its attributes, its ad, sent */
static __attribute__((noinline)) void queue_job(int fd, int proc)
{
	struct batch_ad ad;

	memset(&job_attrs, 0, sizeof(job_attrs));
	set_job_attrs(proc);
	set_transfer_files(proc);
	build_ad(&ad, proc);
	if (batch_write_all(fd, &ad, sizeof(ad)) < 0)
		batch_die("send: %s", strerror(errno));
}

static __attribute__((noinline)) void read_submit_file(int fd, int njobs)
{
	struct batch_ad end = { .magic = BATCH_MAGIC, .cluster = 1,
				.proc = -1 };
	int proc;

	for (proc = 0; proc < njobs; proc++)
		queue_job(fd, proc);
	if (batch_write_all(fd, &end, sizeof(end)) < 0)
		batch_die("send: %s", strerror(errno));
}

static __attribute__((noinline)) int wait_notices(int fd, int njobs)
{
	static const char *const st[] = { "done", "failed", "held" };
	struct batch_notice n;
	int got = 0, done = 0;

	while (got < njobs) {
		if (batch_read_all(fd, &n, sizeof(n)) != sizeof(n))
			batch_die("the schedd went away%s", "");
		if (n.magic != BATCH_MAGIC || n.proc < 0 || n.proc >= njobs ||
		    n.status < 0 || n.status > 2)
			batch_die("bad notice%s", "");
		printf("job %d: %s runs %d value %lld\n", n.proc, st[n.status],
		       n.runs, (long long)n.value);
		done += n.status == 0;
		got++;
	}
	return done;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	int fd, njobs, done;

	batch_self = "batch-submit";
	if (argc != 4)
		batch_die("usage: batch-submit ADDR:PORT NJOBS OUTDIR%s", "");
	fault = batch_fault();
	batch_addr(argv[1], &sa);
	njobs = atoi(argv[2]);
	outdir = argv[3];
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		batch_die("connect: %s", strerror(errno));
	read_submit_file(fd, njobs);
	done = wait_notices(fd, njobs);
	printf("cluster 1: %d done\n", done);
	close(fd);
	return done == njobs ? 0 : 1;
}
