-- tests/apps/tier-wrk.lua - `wrk -s` script of tests/e2e/three-tier.sh: a
-- paced load (each connection waits TIER_WRK_DELAY_MS, default 10, before
-- each request: 4 connections make at most 400 requests a second, so a
-- fully traced stack's session stays a few million events) and the
-- summary line of tests/real/wrk-report.lua (TIER_WRK_REPORT names it).
dofile(os.getenv("TIER_WRK_REPORT"))
local pause = tonumber(os.getenv("TIER_WRK_DELAY_MS") or "10")
delay = function()
	return pause
end
