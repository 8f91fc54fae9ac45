-- A TPC-C-shaped workload of one's own for benchapp's sandbox tests: several files, `require` of a file
-- beside it and of one in a folder, its own prepare and cleanup: warehouses, their orders, and a new-order event
-- that reads a warehouse, inserts an order and reads it back with a join.
local schema = require("orders_schema")
local run = require("orders_run")
local check = require("lib.orders_check")

sysbench.cmdline.options = {
  warehouses = {"Number of warehouses", 2},
  orders_per_event = {"Orders a new-order event inserts", 1},
}

function cmd_prepare()
  local con = sysbench.sql.driver():connect()
  schema.create(con, sysbench.opt.warehouses)
  print("Created " .. sysbench.opt.warehouses .. " warehouses")
end

function cmd_cleanup()
  local con = sysbench.sql.driver():connect()
  schema.drop(con)
  print("Dropped the orders tables")
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare},
  cleanup = {cmd_cleanup},
}

function thread_init()
  con = sysbench.sql.driver():connect()
end

function event()
  for _ = 1, sysbench.opt.orders_per_event do
    run.new_order(con, sysbench.rand.uniform(1, sysbench.opt.warehouses), sysbench.tid)
  end
end

function thread_done()
  check.totals(con)
  con:disconnect()
end
