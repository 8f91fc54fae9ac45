-- A curve with a known peak, for the adaptive thread ladder's test: every event waits on the server for a time
-- that grows with the fourth power of the thread count, so that QPS = threads / (base × (1 + (threads / peak)⁴ / 3))
-- rises to its highest at --peak threads and falls after it (10 % lower at 0.75 × peak, 16 % at 1.4 ×). It needs
-- no table.
sysbench.cmdline.options = {
  peak = {"Thread count of the highest QPS", 8},
  base_ms = {"Wait per event at one thread, in ms", 2},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  local ratio = sysbench.opt.threads / sysbench.opt.peak
  wait_s = sysbench.opt.base_ms / 1000 * (1 + ratio ^ 4 / 3)
end

function event()
  con:query(string.format("SELECT SLEEP(%.6f)", wait_s))
end

function thread_done()
  con:disconnect()
end
