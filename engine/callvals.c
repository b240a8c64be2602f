/*
 * engine/callvals.c - see engine/callvals.h.
 *
 * A function's params row ("RET|name:T,...", engine/symbols.h) is read
 * once per session; registers are given to its arguments as the x86-64
 * SysV ABI does for integer classes: in order, rdi first (rsi first when
 * the return value is a large struct, whose hidden pointer takes rdi), a
 * floating argument taking none of them, an argument in memory neither,
 * a small struct an unknown number (every later one then reads "?").
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "engine/argchunk.h"
#include "engine/callvals.h"
#include "engine/session.h"
#include "share/json.h"

#define CV_MAXFUNC 100000000

struct callvals {
	struct argchunk_reader *regs; /* NULL: no --args */
	uint8_t *has;	  /* by functions.id: recorded with --args */
	char **sig;	  /* by functions.id: params.sig, NULL unknown */
	int64_t n;
};

static const char *const cv_regs[6] = { "rdi", "rsi", "rdx",
					"rcx", "r8",  "r9" };

static int cv_load(sqlite3 *db, struct callvals *cv)
{
	sqlite3_stmt *st;
	int64_t max = 0;

	if (sqlite3_prepare_v2(db, "SELECT max(id) FROM functions WHERE"
				   " flags & 16", -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		max = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (max <= 0 || max > CV_MAXFUNC)
		return 0; /* recorded without --args */
	cv->n = max + 1;
	cv->has = calloc((size_t)cv->n, 1);
	cv->sig = calloc((size_t)cv->n, sizeof(*cv->sig));
	if (!cv->has || !cv->sig)
		return -ENOMEM;
	if (sqlite3_prepare_v2(db, "SELECT id FROM functions WHERE flags & 16",
			       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(st, 0);

			if (id > 0 && id < cv->n)
				cv->has[id] = 1;
		}
		sqlite3_finalize(st);
	}
	if (sqlite3_prepare_v2(db, "SELECT func, sig FROM params", -1, &st,
			       NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(st, 0);
			const char *s = (const char *)sqlite3_column_text(st, 1);

			if (id > 0 && id < cv->n && s && !cv->sig[id] &&
			    !(cv->sig[id] = strdup(s))) {
				sqlite3_finalize(st);
				return -ENOMEM;
			}
		}
		sqlite3_finalize(st);
	}
	return argchunk_reader_open(db, &cv->regs);
}

int callvals_open(struct session *s, struct callvals **out)
{
	struct callvals *cv = calloc(1, sizeof(*cv));
	int err;

	*out = NULL;
	if (!cv)
		return -ENOMEM;
	err = cv_load(session_db(s), cv);
	if (err) {
		callvals_free(cv);
		return err;
	}
	*out = cv;
	return 0;
}

void callvals_free(struct callvals *cv)
{
	if (!cv)
		return;
	argchunk_reader_free(cv->regs);
	for (int64_t i = 0; cv->sig && i < cv->n; i++)
		free(cv->sig[i]);
	free(cv->sig);
	free(cv->has);
	free(cv);
}

int callvals_has(const struct callvals *cv, int64_t func)
{
	return cv && func > 0 && func < cv->n && cv->has[func];
}

/* One value of type code t (symbols.h) as text; json: a JSON value.
 * t NULL: a bare register. */
static void cv_value(const char *t, uint64_t v, int json, char *buf,
		     size_t size)
{
	unsigned n = t && (t[0] == 'i' || t[0] == 'u') ? (unsigned)atoi(t + 1)
						       : 8;
	int64_t sv = (int64_t)v;

	if (n == 1)
		sv = (int8_t)v, v &= 0xff;
	else if (n == 2)
		sv = (int16_t)v, v &= 0xffff;
	else if (n == 4)
		sv = (int32_t)v, v &= 0xffffffffu;
	if (!t) { /* a register: small numbers as numbers */
		if (sv >= -(1LL << 31) && sv < (1LL << 31))
			snprintf(buf, size, "%" PRId64, sv);
		else
			snprintf(buf, size, json ? "\"0x%" PRIx64 "\""
						 : "0x%" PRIx64, v);
	} else if (t[0] == 'i') {
		snprintf(buf, size, "%" PRId64, sv);
	} else if (t[0] == 'u') {
		snprintf(buf, size, "%" PRIu64, v);
	} else if (t[0] == 'b') {
		snprintf(buf, size, "%s", (v & 0xff) ? "true" : "false");
	} else if (t[0] == 'p') {
		snprintf(buf, size, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64,
			 v);
	} else {
		snprintf(buf, size, json ? "null" : "?");
	}
}

/* The arguments of func with registers r: each (name, value text) to fn. */
static void cv_each(const char *sig, const uint64_t *r, int json,
		    void (*fn)(const char *name, size_t nl, const char *val,
			       void *arg),
		    void *arg)
{
	char val[64];
	const char *p, *bar;
	int reg, lost = 0;

	if (!sig || !(bar = strchr(sig, '|'))) { /* no DWARF: the registers */
		for (int i = 0; i < 6; i++) {
			cv_value(NULL, r[i], json, val, sizeof(val));
			fn(cv_regs[i], strlen(cv_regs[i]), val, arg);
		}
		return;
	}
	reg = sig[0] == 'S' ? 1 : 0; /* a large struct's hidden pointer */
	for (p = bar + 1; *p;) {
		const char *colon = strchr(p, ':'), *end;
		char t[8];

		if (!colon)
			break;
		end = strchr(colon, ',');
		if (!end)
			end = colon + strlen(colon);
		snprintf(t, sizeof(t), "%.*s", (int)(end - colon - 1), colon + 1);
		if (t[0] == 's')
			lost = 1; /* its registers, and so every later one's */
		if (lost || t[0] == 'x' || t[0] == 's' || t[0] == 'S' ||
		    reg >= 6)
			cv_value("?", 0, json, val, sizeof(val));
		else
			cv_value(t, r[reg++], json, val, sizeof(val));
		fn(p, (size_t)(colon - p), val, arg);
		p = *end ? end + 1 : end;
	}
}

/* An entry's registers: 1, or 0 when none were recorded. */
static int cv_regs_of(struct callvals *cv, int64_t func, int64_t event,
		      uint64_t *r)
{
	if (!callvals_has(cv, func))
		return 0;
	return argchunk_get(cv->regs, event, r);
}

struct cv_text {
	char *buf;
	size_t size, at;
};

static void cv_text_one(const char *name, size_t nl, const char *val,
			void *arg)
{
	struct cv_text *x = arg;
	int n;

	if (x->at >= x->size)
		return;
	n = snprintf(x->buf + x->at, x->size - x->at, "%s%.*s=%s",
		     x->at ? ", " : "", (int)nl, name, val);
	x->at = n < 0 ? x->size : x->at + (size_t)n;
}

int callvals_args(struct callvals *cv, int64_t func, int64_t event,
		  char *buf, size_t size)
{
	uint64_t r[6];
	struct cv_text x = { buf, size, 0 };

	if (size)
		*buf = 0;
	if (!size || !cv_regs_of(cv, func, event, r))
		return 0;
	cv_each(cv->sig[func], r, 0, cv_text_one, &x);
	return 1;
}

/* The return type code of func ("" when not recorded; NULL: no DWARF). */
static const char *cv_rettype(const struct callvals *cv, int64_t func,
			      char *t, size_t size)
{
	const char *s;

	if (!callvals_has(cv, func))
		return "";
	if (!(s = cv->sig[func]) || !strchr(s, '|'))
		return NULL;
	snprintf(t, size, "%.*s", (int)(strchr(s, '|') - s), s);
	return t;
}

static int cv_ret(const struct callvals *cv, int64_t func, int64_t rax,
		  int json, char *buf, size_t size)
{
	char t[8];
	const char *rt = cv_rettype(cv, func, t, sizeof(t));

	if (rt && (!*rt || strchr("vxsS", rt[0])))
		return 0; /* nothing in rax to show */
	cv_value(rt, (uint64_t)rax, json, buf, size);
	return 1;
}

int callvals_ret(const struct callvals *cv, int64_t func, int64_t rax,
		 char *buf, size_t size)
{
	return cv_ret(cv, func, rax, 0, buf, size);
}

struct cv_json {
	FILE *out;
	int n;
};

static void cv_json_one(const char *name, size_t nl, const char *val,
			void *arg)
{
	struct cv_json *x = arg;
	char key[128];

	snprintf(key, sizeof(key), "%.*s", (int)nl, name);
	fputs(x->n++ ? "," : "", x->out);
	json_str(x->out, key);
	fprintf(x->out, ":%s", val);
}

void callvals_json_args(struct callvals *cv, int64_t func, int64_t event,
			FILE *out)
{
	uint64_t r[6];
	struct cv_json x = { out, 0 };

	if (!cv_regs_of(cv, func, event, r))
		return;
	fputs(",\"args\":{", out);
	cv_each(cv->sig[func], r, 1, cv_json_one, &x);
	fputc('}', out);
}

void callvals_json_ret(const struct callvals *cv, int64_t func, int64_t rax,
		       FILE *out)
{
	char v[64];

	if (cv_ret(cv, func, rax, 1, v, sizeof(v)))
		fprintf(out, ",\"retval\":%s", v);
}
