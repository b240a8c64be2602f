/*
 * engine/http.h - the one HTTP request propel makes: a POST of a body to
 * an http:// URL (an OpenTelemetry Collector's /v1/traces), HTTP/1.1,
 * one connection per request, no TLS.
 */
#ifndef PROPEL_ENGINE_HTTP_H
#define PROPEL_ENGINE_HTTP_H

#include <stddef.h>

/* Check that url is http://HOST[:PORT][/PATH]: 0 or -EINVAL with *cause. */
int http_url_check(const char *url, char **cause);

/* POST body to url as ctype; 0 on a 2xx answer, else -errno (-EPROTO for
 * another status, its status line in *cause).  Gives up after timeout_ms
 * without an answer. */
int http_post(const char *url, const char *ctype, const void *body,
	      size_t len, int timeout_ms, char **cause);

#endif
