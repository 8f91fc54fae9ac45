-- A workload of one's own for benchapp's tests: point reads (and some updates) on kv_itemsN tables.
local common = require("kv_common")

sysbench.cmdline.options = {
  tables = {"Number of tables", 1},
  table_size = {"Rows per table", 1000},
  reads_per_event = {"Point reads in one event", 2},
  update_share = {"Share of events that also update one row", 0.25},
  kv_mode = {"What an event does: read or mixed", "mixed"},
}

local function connect()
  return sysbench.sql.driver():connect()
end

function cmd_prepare()
  local con = connect()
  for i = sysbench.tid % sysbench.opt.threads + 1, sysbench.opt.tables, sysbench.opt.threads do
    print("Creating table '" .. common.table_name(i) .. "'...")
    common.create(con, i, sysbench.opt.table_size)
  end
end

function cmd_cleanup()
  local con = connect()
  for i = 1, sysbench.opt.tables do
    print("Dropping table '" .. common.table_name(i) .. "'...")
    common.drop(con, i)
  end
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
  cleanup = {cmd_cleanup},
}

function thread_init()
  con = connect()
end

function event()
  local t = common.table_name(sysbench.rand.uniform(1, sysbench.opt.tables))
  for _ = 1, sysbench.opt.reads_per_event do
    con:query("SELECT v FROM " .. t .. " WHERE id = " .. sysbench.rand.uniform(1, sysbench.opt.table_size))
  end
  if sysbench.opt.kv_mode == "mixed" and sysbench.rand.uniform_double() < sysbench.opt.update_share then
    con:query("UPDATE " .. t .. " SET v = v + 1 WHERE id = " .. sysbench.rand.uniform(1, sysbench.opt.table_size))
  end
end

function thread_done()
  con:disconnect()
end
