#!/usr/bin/env node
// tests/e2e/speedscope-load.js - open a profile in speedscope (the npm
// package's release build) under headless Chromium and say what it shows.
//
//   NODE_PATH=DIR/node_modules node speedscope-load.js SPEEDSCOPE_DIR PROFILE PNG
//
// Serves SPEEDSCOPE_DIR and PROFILE on 127.0.0.1 (no network), loads
// index.html#profileURL=..., waits for the flame chart, saves a screenshot
// to PNG, switches to the Sandwich view (key 3: a table of every function
// of the profile shown, as DOM text) and prints one JSON line:
//   {"title": ..., "profiles": "1/7" or null, "names": [...], "error": null}
// A profile speedscope cannot import gives "error" (its message), no names.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const puppeteer = require('puppeteer-core');

const [dir, profile, png] = process.argv.slice(2);
const types = { '.html': 'text/html', '.js': 'text/javascript',
		'.css': 'text/css', '.wasm': 'application/wasm' };

const server = http.createServer((req, res) => {
	const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
	const file = url === '/profile' ? profile
		: path.join(dir, path.normalize(url === '/' ? '/index.html' : url));
	fs.readFile(file, (err, data) => {
		if (err) {
			res.writeHead(404);
			res.end();
			return;
		}
		res.writeHead(200, { 'Content-Type':
			types[path.extname(file)] || 'application/octet-stream' });
		res.end(data);
	});
});

async function main() {
	await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
	const port = server.address().port;
	const browser = await puppeteer.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	const out = { title: null, profiles: null, names: [], error: null };
	try {
		const page = await browser.newPage();
		await page.setViewport({ width: 1400, height: 900 });
		await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=` +
				encodeURIComponent(`http://127.0.0.1:${port}/profile`),
				{ waitUntil: 'networkidle0', timeout: 60000 });
		// the flame chart is a canvas; an import error is text
		await page.waitForFunction(() =>
			document.querySelectorAll('canvas').length > 0 ||
			/error|went wrong|unrecognized/i.test(document.body.innerText),
			{ timeout: 60000 });
		await new Promise((r) => setTimeout(r, 1000));
		const text = await page.evaluate(() => document.body.innerText);
		if (/something went wrong|unrecognized format|error/i.test(text) &&
		    !(await page.$('canvas')))
			out.error = text.split('\n').slice(0, 3).join(' ');
		await page.screenshot({ path: png });
		out.title = await page.title();
		const m = text.match(/\((\d+)\/(\d+)\)/);
		out.profiles = m ? `${m[1]}/${m[2]}` : null;
		if (!out.error) {
			await page.keyboard.press('3'); // Sandwich
			await new Promise((r) => setTimeout(r, 1000));
			const names = await page.evaluate(() =>
				Array.from(document.querySelectorAll('table td, [class*="name"], span'))
					.map((e) => e.innerText.trim()).filter((t) => t));
			out.names = Array.from(new Set(names));
		}
	} finally {
		await browser.close();
		server.close();
	}
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.log(JSON.stringify({ error: String(e && e.message || e) }));
	server.close();
	process.exit(1);
});
