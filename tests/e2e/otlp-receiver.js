#!/usr/bin/env node
// tests/e2e/otlp-receiver.js - an OTLP/HTTP receiver for the tests: what an
// OpenTelemetry Collector does with `propel export --otlp-endpoint`.
//
//   NODE_PATH=DIR/node_modules node otlp-receiver.js PORTFILE OUT.json [STATUS]
//
// Listens on 127.0.0.1 (a free port, written to PORTFILE), decodes every
// POST /v1/traces (Content-Type application/x-protobuf) with the official
// OpenTelemetry protobuf definitions (@opentelemetry/otlp-transformer's
// generated protobufjs code), answers STATUS (default 200), and on SIGTERM
// writes everything received to OUT.json as one OTLP/JSON document (ids in
// hex, int64 as strings) plus {"requests": N, "bad": [why...]}.
'use strict';
const fs = require('fs');
const http = require('http');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const [portfile, outfile, status] = process.argv.slice(2);
const all = { resourceSpans: [], requests: 0, bad: [] };
const hex = (b) => Buffer.from(b || []).toString('hex');

function toJson(rs) {
	for (const ss of rs.scopeSpans || [])
		for (const sp of ss.spans || []) {
			sp.traceId = hex(sp.traceId);
			sp.spanId = hex(sp.spanId);
			if (sp.parentSpanId && sp.parentSpanId.length)
				sp.parentSpanId = hex(sp.parentSpanId);
			else
				delete sp.parentSpanId;
			for (const l of sp.links || []) {
				l.traceId = hex(l.traceId);
				l.spanId = hex(l.spanId);
			}
		}
	return rs;
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		all.requests++;
		try {
			if (req.method !== 'POST' || req.url !== '/v1/traces')
				throw new Error(`${req.method} ${req.url}`);
			if (req.headers['content-type'] !== 'application/x-protobuf')
				throw new Error('content-type ' + req.headers['content-type']);
			const msg = Req.decode(Buffer.concat(chunks));
			const bad = Req.verify(msg);
			if (bad)
				throw new Error(bad);
			const obj = Req.toObject(msg, { longs: String, defaults: false });
			for (const rs of obj.resourceSpans || [])
				all.resourceSpans.push(toJson(rs));
		} catch (e) {
			all.bad.push(String(e && e.message || e));
		}
		res.writeHead(Number(status || 200), { 'Content-Type': 'application/x-protobuf' });
		res.end();
	});
});
server.listen(0, '127.0.0.1', () => {
	fs.writeFileSync(portfile, String(server.address().port));
});
process.on('SIGTERM', () => {
	fs.writeFileSync(outfile, JSON.stringify(all));
	process.exit(0);
});
