-- A workload whose cost is the client's: every event spends its time in sysbench's own Lua (a loop of arithmetic)
-- and sends one trivial query, so that with more threads than the client host has cores, sysbench's CPU runs out
-- long before the server's. The test of "what ran out: the client host" runs it. It needs no table.
sysbench.cmdline.options = {
  spin = {"Loop iterations per event", 300000},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  local x = 0
  for i = 1, sysbench.opt.spin do
    x = (x + i * 7) % 1000003
  end
  con:query("SELECT " .. (x % 10))
end

function thread_done()
  con:disconnect()
end
