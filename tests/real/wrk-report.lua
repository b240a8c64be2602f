-- tests/real/wrk-report.lua - `wrk -s` script: one summary line a test can
-- parse, after wrk's own report:
--   propel-wrk requests=N duration_us=N rps=N connect=N read=N write=N status=N timeout=N
-- status = responses that were not 2xx/3xx; connect/read/write/timeout = socket errors.
done = function(summary, latency, requests)
	local e = summary.errors
	local rps = 0
	if summary.duration > 0 then
		rps = summary.requests * 1e6 / summary.duration
	end
	io.write(string.format(
		"propel-wrk requests=%d duration_us=%d rps=%.1f connect=%d read=%d write=%d status=%d timeout=%d\n",
		summary.requests, summary.duration, rps, e.connect, e.read, e.write, e.status, e.timeout))
end
