/*
 * tests/apps/demo/demo.c - the bundled demo program of `make demo`: an order
 * pipeline run by a small worker pool, with one rare input that crashes it.
 *
 *   demo [--seed N] [--orders N] [--workers N] [--safe]
 *
 * main generates N orders from the seed (a fixed LCG: the same seed gives the
 * same orders on every machine), puts them on a queue, and W worker threads
 * take them one by one through the pipeline
 *
 *   process_order -> parse_order -> validate_order
 *                 -> price_order -> find_product, apply_discount, compute_tax
 *                 -> reserve_stock (mutex) -> ship_order -> format_label
 *
 * and add the result to per-worker totals; main joins the workers and prints
 * "demo: N orders, M shipped, total CENTS" (plus one line per rejected order).
 *
 * The rare input: about one order in 60 names a product that is not in the
 * catalog.  validate_order only checks the syntax, so find_product returns
 * NULL and apply_discount dereferences it: SIGSEGV in apply_discount, three
 * frames under process_order, in whichever worker took the order.  With the
 * default seed (4) and 200 orders exactly one such order exists (order 121).
 * --safe makes validate_order look the product up and reject the order
 * instead, so the same run completes.  Built by tests/demo-build.sh.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_MAX_WORKERS 8

struct product {
	const char *sku;
	int price_cents;
	int discount_pct;
	int stock;
};

struct order {
	int id;
	char text[64]; /* "id=17 sku=SKU-103 qty=3 zip=75011" */
	char sku[16];
	int qty;
	int zip;
	long total_cents;
	int shipped;
};

static struct product catalog[] = {
	{ "SKU-100", 1999, 0, 1000 },  { "SKU-101", 4550, 10, 1000 },
	{ "SKU-102", 899, 0, 1000 },   { "SKU-103", 12000, 15, 1000 },
	{ "SKU-104", 250, 0, 1000 },   { "SKU-105", 7300, 5, 1000 },
	{ "SKU-106", 15999, 20, 1000 }, { "SKU-107", 450, 0, 1000 },
};
#define DEMO_NPRODUCTS (int)(sizeof catalog / sizeof catalog[0])

static pthread_mutex_t stock_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct order *orders;
static int norders, next_order, safe_mode;

struct worker_stats {
	int done, shipped;
	long total_cents;
};

static unsigned demo_rand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

static void generate_orders(unsigned seed, int n)
{
	unsigned st = seed;

	orders = calloc((size_t)n, sizeof *orders);
	for (int i = 0; i < n; i++) {
		unsigned r = demo_rand(&st);
		int prod = (int)(r % DEMO_NPRODUCTS);
		int bogus = demo_rand(&st) % 60 == 0; /* the rare input */

		snprintf(orders[i].text, sizeof orders[i].text,
			 "id=%d sku=SKU-%d qty=%u zip=%05u", i,
			 bogus ? 999 : 100 + prod, 1 + demo_rand(&st) % 5,
			 10000 + demo_rand(&st) % 80000);
	}
	norders = n;
}

struct product *find_product(const char *sku)
{
	for (int i = 0; i < DEMO_NPRODUCTS; i++)
		if (strcmp(catalog[i].sku, sku) == 0)
			return &catalog[i];
	return NULL;
}

int parse_order(struct order *o)
{
	return sscanf(o->text, "id=%d sku=%15s qty=%d zip=%d", &o->id, o->sku,
		      &o->qty, &o->zip) == 4 ? 0 : -1;
}

int validate_order(const struct order *o)
{
	if (strncmp(o->sku, "SKU-", 4) != 0 || o->qty <= 0 || o->zip < 10000)
		return -1;
	if (safe_mode && !find_product(o->sku))
		return -1;
	return 0;
}

long apply_discount(const struct product *p, long cents)
{
	/* BUG: p is NULL for a SKU that is not in the catalog. */
	return cents - cents * p->discount_pct / 100;
}

long compute_tax(long cents, int zip)
{
	int rate = zip < 50000 ? 8 : 6;

	return cents * rate / 100;
}

long price_order(struct order *o)
{
	struct product *p = find_product(o->sku);
	long base = (long)(p ? p->price_cents : 0) * o->qty;
	long net = apply_discount(p, base);

	return net + compute_tax(net, o->zip);
}

int reserve_stock(const struct order *o)
{
	struct product *p = find_product(o->sku);
	int ok;

	pthread_mutex_lock(&stock_lock);
	ok = p && p->stock >= o->qty;
	if (ok)
		p->stock -= o->qty;
	pthread_mutex_unlock(&stock_lock);
	return ok ? 0 : -1;
}

size_t format_label(const struct order *o, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "#%d %s x%d -> %05d", o->id, o->sku,
				o->qty, o->zip);
}

int ship_order(struct order *o)
{
	char label[80];

	if (format_label(o, label, sizeof label) >= sizeof label)
		return -1;
	o->shipped = 1;
	return 0;
}

int process_order(struct order *o)
{
	if (parse_order(o) < 0 || validate_order(o) < 0)
		return -1;
	o->total_cents = price_order(o);
	if (reserve_stock(o) < 0)
		return -1;
	return ship_order(o);
}

static struct order *take_order(void)
{
	struct order *o = NULL;

	pthread_mutex_lock(&queue_lock);
	if (next_order < norders)
		o = &orders[next_order++];
	pthread_mutex_unlock(&queue_lock);
	return o;
}

void *worker_main(void *arg)
{
	struct worker_stats *st = arg;
	struct order *o;

	while ((o = take_order())) {
		st->done++;
		if (process_order(o) == 0) {
			st->shipped++;
			st->total_cents += o->total_cents;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned seed = 4;
	int n = 200, nworkers = 3, shipped = 0;
	long total = 0;
	pthread_t th[DEMO_MAX_WORKERS];
	struct worker_stats stats[DEMO_MAX_WORKERS];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--orders") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			nworkers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--safe"))
			safe_mode = 1;
		else {
			fprintf(stderr, "usage: demo [--seed N] [--orders N] "
					"[--workers N] [--safe]\n");
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	if (n < 1 || nworkers < 1 || nworkers > DEMO_MAX_WORKERS) {
		fprintf(stderr, "demo: bad --orders or --workers\n");
		return 2;
	}
	generate_orders(seed, n);
	memset(stats, 0, sizeof stats);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&th[i], NULL, worker_main, &stats[i]);
	for (int i = 0; i < nworkers; i++) {
		pthread_join(th[i], NULL);
		shipped += stats[i].shipped;
		total += stats[i].total_cents;
	}
	for (int i = 0; i < n; i++)
		if (!orders[i].shipped)
			printf("demo: rejected %s\n", orders[i].text);
	printf("demo: %d orders, %d shipped, total %ld\n", n, shipped, total);
	free(orders);
	return 0;
}
