-- tpcc_like: a small test workload of benchapp's for sysbench 1.0.20 (LuaJIT).
-- It is TPC-C-*shaped* (warehouses, districts, customers, orders, history; new-order, payment and
-- order-status transactions; 1 % of new orders roll back by design), but it is NOT TPC-C: no items,
-- stock or order lines, no keying/think times, a fixed small data set.
--
-- Files: tpcc_like.lua (this entry: options, commands, event loop), tpcc_like_schema.lua (create,
-- load, drop), tpcc_like_run.lua (the transactions, as global functions), tpcc_like_check.lua (the
-- `check` command). Plain SQL, tested on MariaDB (mysql driver) and PostgreSQL (pgsql driver).
--
--   LUA_PATH="$PWD/?.lua;;" sysbench $PWD/tpcc_like.lua --db-driver=mysql ... --scale=2 prepare
--   ... run / check / cleanup   (give check the same --scale, --tables and --customers as prepare)

local schema = require("tpcc_like_schema")
local run = require("tpcc_like_run")          -- defines the globals new_order(), payment(), order_status()
local check = require("tpcc_like_check")

sysbench.cmdline.options = {
  scale = {"Number of warehouses", 1, sysbench.cmdline.ARG_INT},
  tables = {"Number of table sets", 1, sysbench.cmdline.ARG_INT},
  customers = {"Customers per district (each is loaded with one order)", 10, sysbench.cmdline.ARG_INT},
}

local function cmd_prepare()
  local con = sysbench.sql.driver():connect()
  for t = 1, sysbench.opt.tables do
    schema.create(con, t)
    schema.load(con, t, sysbench.opt.scale, sysbench.opt.customers)
    print(string.format("Table set %d: %d warehouse(s), %d districts, %d customers per district",
                        t, sysbench.opt.scale, sysbench.opt.scale * schema.DISTRICTS, sysbench.opt.customers))
  end
  con:disconnect()
end

local function cmd_cleanup()
  local con = sysbench.sql.driver():connect()
  for t = 1, sysbench.opt.tables do
    schema.drop(con, t)
  end
  print(string.format("Dropped %d table set(s)", sysbench.opt.tables))
  con:disconnect()
end

local function cmd_check()
  local con = sysbench.sql.driver():connect()
  local ok = check.run(con, sysbench.opt.tables, sysbench.opt.scale)
  con:disconnect()
  return ok  -- false makes sysbench 1.0.20 exit with status 1
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare},
  cleanup = {cmd_cleanup},
  check = {cmd_check},
}

function thread_init()
  run.open()
end

function thread_done()
  run.close()
end

-- An ignorable SQL error (deadlock, lock wait timeout; serialization failure on PostgreSQL) makes
-- sysbench restart event(): roll back first, so no half transaction survives into the retry.
function sysbench.hooks.before_restart_event(err)
  run.rollback()
end

-- The mix: 45 % new_order, 43 % payment, 12 % order_status. The transactions are looked up by global
-- name at call time, so a wrapper that replaces _G.new_order sees every call. Nothing is returned:
-- a true value returned by event() would stop the benchmark.
function event()
  local r = sysbench.rand.uniform(1, 100)
  if r <= 45 then
    _G["new_order"]()
  elseif r <= 88 then
    _G["payment"]()
  else
    _G["order_status"]()
  end
end
