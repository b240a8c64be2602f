#!/usr/bin/env node
// tests/e2e/otlp-roundtrip.js - read `propel export --format=otlp` with the
// official OpenTelemetry protobuf definitions (the protobufjs code that
// @opentelemetry/otlp-transformer generates from opentelemetry-proto) and
// round-trip it through the binary encoding.
//
//   NODE_PATH=DIR/node_modules node otlp-roundtrip.js OTLP.json
//
// Prints one JSON line: {"error": null or why, "bytes": protobuf size,
// "resources", "spans", "links", "same": the decoded message equals the
// input (ids as hex, times as strings)}.
'use strict';
const fs = require('fs');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const hexToB = (h) => Buffer.from(h, 'hex');
const bToHex = (b) => Buffer.from(b).toString('hex');

// OTLP/JSON differs from protobuf JSON in one way: ids are hex, not base64
function idsToBytes(req) {
	for (const rs of req.resourceSpans || [])
		for (const ss of rs.scopeSpans || [])
			for (const sp of ss.spans || []) {
				for (const k of ['traceId', 'spanId', 'parentSpanId'])
					if (sp[k] !== undefined) sp[k] = hexToB(sp[k]);
				for (const l of sp.links || []) {
					l.traceId = hexToB(l.traceId);
					l.spanId = hexToB(l.spanId);
				}
			}
	return req;
}

function summary(obj) {
	const out = [];
	for (const rs of obj.resourceSpans || [])
		for (const ss of rs.scopeSpans || [])
			for (const sp of ss.spans || []) {
				if (!sp.traceId || sp.traceId.length !== 16 ||
				    !sp.spanId || sp.spanId.length !== 8 ||
				    typeof sp.name !== 'string' || !sp.name)
					throw new Error('span ' + JSON.stringify(sp).slice(0, 120) +
						': ids must be 16 and 8 bytes, name a string');
				out.push([bToHex(sp.traceId), bToHex(sp.spanId),
					sp.parentSpanId && sp.parentSpanId.length ? bToHex(sp.parentSpanId) : '',
					sp.name, String(sp.startTimeUnixNano), String(sp.endTimeUnixNano),
					(sp.links || []).map((l) => bToHex(l.spanId)).join(',')].join('|'));
			}
	return out;
}

const res = { error: null, bytes: 0, resources: 0, spans: 0, links: 0, same: false };
try {
	const json = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
	const input = idsToBytes(json);
	// int64 fields are decimal strings in OTLP/JSON: fromObject reads
	// them, verify then checks the message against the definitions
	const msg = Req.fromObject(input);
	const bad = Req.verify(msg);
	if (bad) throw new Error('verify: ' + bad);
	const buf = Req.encode(msg).finish();
	res.bytes = buf.length;
	const back = Req.toObject(Req.decode(buf), { longs: String, defaults: false });
	res.resources = (back.resourceSpans || []).length;
	const a = summary(input), b = summary(back);
	res.spans = b.length;
	res.links = b.reduce((n, s) => n + (s.split('|')[6] ? s.split('|')[6].split(',').length : 0), 0);
	res.same = a.length === b.length && a.every((s, i) => s === b[i]);
} catch (e) {
	res.error = String(e && e.message || e);
}
console.log(JSON.stringify(res));
