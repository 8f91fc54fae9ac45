-- benchapp: sysbench 0.5-era "legacy" OLTP workloads on the sysbench 1.0 Lua API.
--
-- Shared part of oltp.lua, select.lua and update_non_index.lua: option
-- declarations, option resolution, table creation and loading (prepare),
-- table removal (cleanup) and per-thread connection setup.
--
-- This is benchapp's own implementation. It reproduces what the 0.5 scripts
-- (sysbench/tests/db/*.lua on the 0.5 branch, later shipped by sysbench 1.0 as
-- tests/include/oltp_legacy/) sent to the server, statement for statement:
--   * the same option names (0.5 spelling, e.g. --oltp-tables-count; sysbench
--     1.0 accepts --oltp_tables_count as the same option) and defaults;
--   * the same schema: sbtest<N>(id, k, c CHAR(120), pad CHAR(60)), a PRIMARY
--     KEY on id (or a plain KEY with --oltp-secondary), an index on k;
--   * the same statements per transaction, sent as plain text queries with
--     literal values (no server-side prepared statements), one table per
--     transaction.
--
-- How the scripts find this file: sysbench 1.0 does NOT put the script's
-- directory on package.path (it holds ./?.lua, luarocks paths and
-- /usr/share/sysbench/?.lua only), so every entry script computes its own
-- directory from sysbench.cmdline.script_path (the path as given on the
-- command line, or to --test), falling back to the chunk name from
-- debug.getinfo, and dofile()s common.lua from there. A relative script path
-- stays valid because sysbench does not change its working directory.

if sysbench.cmdline.command == nil then
   error("a command is required: prepare, run, cleanup or help")
end

-- ---------------------------------------------------------------------------
-- Options. Keys are spelled as in 0.5 (hyphens); sysbench 1.0 exposes them
-- in sysbench.opt with underscores (sysbench.opt.oltp_tables_count) and
-- accepts both spellings on the command line. `sysbench <script> help`
-- lists them.
-- ---------------------------------------------------------------------------
sysbench.cmdline.options = {
   ["oltp-tables-count"] =
      {"Number of tables sbtest1..sbtestN", 1},
   ["oltp-table-size"] =
      {"Number of rows per table", 10000},
   ["oltp-range-size"] =
      {"Number of ids covered by each range SELECT", 100},
   ["oltp-point-selects"] =
      {"Point SELECTs per transaction (oltp.lua)", 10},
   ["oltp-simple-ranges"] =
      {"Simple range SELECTs per transaction (oltp.lua)", 1},
   ["oltp-sum-ranges"] =
      {"SELECT SUM() ranges per transaction (oltp.lua)", 1},
   ["oltp-order-ranges"] =
      {"SELECT ... ORDER BY ranges per transaction (oltp.lua)", 1},
   ["oltp-distinct-ranges"] =
      {"SELECT DISTINCT ... ORDER BY ranges per transaction (oltp.lua)", 1},
   ["oltp-index-updates"] =
      {"UPDATEs of the indexed column k per transaction (oltp.lua)", 1},
   ["oltp-non-index-updates"] =
      {"UPDATEs of the non-indexed column c per transaction (oltp.lua)", 1},
   ["oltp-delete-inserts"] =
      {"DELETE+INSERT pairs per transaction (oltp.lua)", 1},
   ["oltp-range-selects"] =
      {"Run the range SELECTs at all (oltp.lua)", true},
   ["oltp-read-only"] =
      {"Only the SELECTs, no UPDATE/DELETE/INSERT (oltp.lua)", false},
   ["oltp-write-only"] =
      {"Only the UPDATE/DELETE/INSERT, no SELECTs (oltp.lua)", false},
   ["oltp-skip-trx"] =
      {"No BEGIN/COMMIT: every statement in autocommit mode (oltp.lua)",
       false},
   ["oltp-auto-inc"] =
      {"id is AUTO_INCREMENT (MySQL) / SERIAL (PostgreSQL) and prepare " ..
          "lets the server number the rows; off: prepare sends ids 1..N",
       true},
   ["oltp-secondary"] =
      {"Index id with a plain secondary KEY instead of the PRIMARY KEY",
       false},
   ["oltp-create-secondary"] =
      {"Create the secondary index k_N on column k after loading", true},
   ["skip-create-table"] =
      {"prepare does not CREATE the tables: it loads rows into tables " ..
          "created beforehand (e.g. with a sharding clause)", false},
   ["mysql-table-engine"] =
      {"Storage engine of the created tables (MySQL)", "innodb"},
   ["mysql-table-options"] =
      {"Text appended to CREATE TABLE (MySQL)", ""},
   ["myisam-max-rows"] =
      {"MAX_ROWS of the created tables when the engine is MyISAM", 1000000},
   ["tables"] =
      {"Alias of --oltp-tables-count (used when > 0 and " ..
          "--oltp-tables-count is left at its default)", 0},
   ["table-size"] =
      {"Alias of --oltp-table-size (used when > 0 and " ..
          "--oltp-table-size is left at its default)", 0},
   ["rand-init"] =
      {"Accepted for 0.5 command lines and ignored (sysbench 1.0 always " ..
          "seeds its generator; see --rand-seed)", false},
   ["start-id"] =
      {"benchapp's loader: prepare loads ids start-id..table-size with " ..
          "explicit ids; 0: from one past each table's largest id (to " ..
          "resume a prepare that stopped)", 1},
   ["id-start-val"] =
      {"Accepted for command lines written for sharding middleware and " ..
          "ignored", 0},
   ["id-step-val"] =
      {"Accepted for command lines written for sharding middleware and " ..
          "ignored", 0},
}

local DEFAULT_TABLES_COUNT = 1
local DEFAULT_TABLE_SIZE = 10000

-- Random strings as in 0.5: 10 (c) and 5 (pad) groups of 11 digits.
local C_TEMPLATE = string.rep("###########-", 9) .. "###########"
local PAD_TEMPLATE = string.rep("###########-", 4) .. "###########"

function legacy_c_value()
   return sysbench.rand.string(C_TEMPLATE)
end

function legacy_pad_value()
   return sysbench.rand.string(PAD_TEMPLATE)
end

-- Resolved options as plain Lua values; built on first use in each Lua state
-- (sysbench.opt does not exist yet while the script's main chunk first runs).
local cfg_cache

function legacy_cfg()
   if cfg_cache ~= nil then
      return cfg_cache
   end
   local o = sysbench.opt
   local c = {
      tables_count = o.oltp_tables_count,
      table_size = o.oltp_table_size,
      range_size = o.oltp_range_size,
      point_selects = o.oltp_point_selects,
      simple_ranges = o.oltp_simple_ranges,
      sum_ranges = o.oltp_sum_ranges,
      order_ranges = o.oltp_order_ranges,
      distinct_ranges = o.oltp_distinct_ranges,
      index_updates = o.oltp_index_updates,
      non_index_updates = o.oltp_non_index_updates,
      delete_inserts = o.oltp_delete_inserts,
      range_selects = o.oltp_range_selects,
      read_only = o.oltp_read_only,
      write_only = o.oltp_write_only,
      skip_trx = o.oltp_skip_trx,
      auto_inc = o.oltp_auto_inc,
      secondary = o.oltp_secondary,
      create_secondary = o.oltp_create_secondary,
      skip_create_table = o.skip_create_table,
      start_id = o.start_id,
      engine = o.mysql_table_engine,
      table_options = o.mysql_table_options,
      myisam_max_rows = o.myisam_max_rows,
   }
   -- 1.0-style aliases: only when given (> 0) and the 0.5 option was not.
   if o.tables > 0 and c.tables_count == DEFAULT_TABLES_COUNT then
      c.tables_count = o.tables
   end
   if o.table_size > 0 and c.table_size == DEFAULT_TABLE_SIZE then
      c.table_size = o.table_size
   end
   if c.tables_count < 1 then
      error("--oltp-tables-count must be at least 1")
   end
   if c.start_id < 0 then
      error("--start-id must not be negative")
   end
   if c.table_size < 0 then
      error("--oltp-table-size must not be negative")
   end
   if c.read_only and c.write_only then
      error("--oltp-read-only and --oltp-write-only are mutually exclusive")
   end
   cfg_cache = c
   return c
end

local function driver_kind(drv)
   local name = drv:name()
   if name == "mysql" or name == "attachsql" or name == "drizzle" then
      return "mysql"
   elseif name == "pgsql" then
      return "pgsql"
   end
   error("unsupported database driver: " .. name)
end

-- ---------------------------------------------------------------------------
-- prepare
-- ---------------------------------------------------------------------------
local function create_table_sql(kind, c, n)
   local id_key
   if c.secondary then
      id_key = "KEY xid (id)"
   else
      id_key = "PRIMARY KEY (id)"
   end
   if kind == "mysql" then
      local storage = "ENGINE = " .. c.engine
      if string.lower(c.engine) == "myisam" then
         storage = storage .. " MAX_ROWS = " .. c.myisam_max_rows
      end
      return string.format(
         "CREATE TABLE sbtest%d (\n" ..
         "  id INTEGER UNSIGNED NOT NULL%s,\n" ..
         "  k INTEGER UNSIGNED DEFAULT '0' NOT NULL,\n" ..
         "  c CHAR(120) DEFAULT '' NOT NULL,\n" ..
         "  pad CHAR(60) DEFAULT '' NOT NULL,\n" ..
         "  %s\n" ..
         ") /*! %s */ %s",
         n, c.auto_inc and " AUTO_INCREMENT" or "", id_key, storage,
         c.table_options)
   end
   -- PostgreSQL has no inline "KEY name (col)": with --oltp-secondary the id
   -- index is created separately (see create_table); the 0.5 script sent
   -- "KEY xid (id)" here and failed.
   local cols = string.format(
      "CREATE TABLE sbtest%d (\n" ..
      "  id %s NOT NULL,\n" ..
      "  k INTEGER DEFAULT '0' NOT NULL,\n" ..
      "  c CHAR(120) DEFAULT '' NOT NULL,\n" ..
      "  pad CHAR(60) DEFAULT '' NOT NULL",
      n, c.auto_inc and "SERIAL" or "INTEGER")
   if c.secondary then
      return cols .. "\n)"
   end
   return cols .. ",\n  PRIMARY KEY (id)\n)"
end

local function table_exists(con, n)
   local ok = pcall(function()
      con:query(string.format("SELECT id, k, c, pad FROM sbtest%d WHERE 1=0",
                              n))
   end)
   return ok
end

-- The one value of a one-row query, as a number (nil for SQL NULL).
local function query_number(con, sql)
   local rs = con:query(sql)
   local row = rs:fetch_row()
   if row == nil or row[1] == nil then
      return nil
   end
   return tonumber(row[1])
end

local function secondary_index_exists(kind, con, n)
   if kind == "mysql" then
      return query_number(con, string.format(
         "SELECT COUNT(*) FROM information_schema.statistics WHERE " ..
         "table_schema = DATABASE() AND table_name = 'sbtest%d' AND " ..
         "index_name = 'k_%d'", n, n)) > 0
   end
   return query_number(con, string.format(
      "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() " ..
      "AND tablename = 'sbtest%d' AND indexname = 'k_%d'", n, n)) > 0
end

local function load_table(drv, con, c, n)
   local kind = driver_kind(drv)

   if c.skip_create_table then
      if not table_exists(con, n) then
         error(string.format("--skip-create-table is on but table " ..
                                "'sbtest%d' does not exist: create it first",
                             n))
      end
      print(string.format("Using existing table 'sbtest%d'...", n))
   else
      print(string.format("Creating table 'sbtest%d'...", n))
      con:query(create_table_sql(kind, c, n))
      if kind == "pgsql" and c.secondary then
         con:query(string.format("CREATE INDEX xid_%d ON sbtest%d (id)", n, n))
      end
   end

   -- benchapp's loader: from --start-id (0: one past the largest id already
   -- there) with explicit ids, so that a prepare that stopped resumes where
   -- it stopped and a table can hold only the ids near the top of its range.
   local first_id = c.start_id
   if first_id == 0 then
      first_id = (query_number(con, string.format(
         "SELECT MAX(id) FROM sbtest%d", n)) or 0) + 1
      print(string.format("Resuming 'sbtest%d' from id %d", n, first_id))
   end
   local explicit_ids = not c.auto_inc or first_id ~= 1

   local count = math.max(0, c.table_size - first_id + 1)
   print(string.format("Inserting %d records into 'sbtest%d'", count, n))
   if count > 0 then
      if explicit_ids then
         con:bulk_insert_init(
            string.format("INSERT INTO sbtest%d(id, k, c, pad) VALUES", n))
      else
         con:bulk_insert_init(
            string.format("INSERT INTO sbtest%d(k, c, pad) VALUES", n))
      end
      for id = first_id, c.table_size do
         local k = sysbench.rand.default(1, c.table_size)
         if explicit_ids then
            con:bulk_insert_next(string.format("(%d, %d, '%s', '%s')", id, k,
                                               legacy_c_value(),
                                               legacy_pad_value()))
         else
            con:bulk_insert_next(string.format("(%d, '%s', '%s')", k,
                                               legacy_c_value(),
                                               legacy_pad_value()))
         end
      end
      con:bulk_insert_done()
   end

   if c.create_secondary and not (c.start_id == 0 and
                                  secondary_index_exists(kind, con, n)) then
      print(string.format("Creating secondary indexes on 'sbtest%d'...", n))
      con:query(string.format("CREATE INDEX k_%d ON sbtest%d(k)", n, n))
   end
end

-- Runs in every thread (--threads); tables are dealt out round-robin, so
-- several tables load in parallel while one table is always loaded by one
-- thread (and with --oltp-auto-inc its ids come out as 1..N).
local function cmd_prepare()
   local c = legacy_cfg()
   local first = sysbench.tid % sysbench.opt.threads + 1
   if first > c.tables_count then
      return
   end
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for n = first, c.tables_count, sysbench.opt.threads do
      load_table(drv, con, c, n)
   end
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
}

-- ---------------------------------------------------------------------------
-- cleanup
-- ---------------------------------------------------------------------------
function cleanup()
   local c = legacy_cfg()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for n = 1, c.tables_count do
      print(string.format("Dropping table 'sbtest%d'...", n))
      con:query("DROP TABLE IF EXISTS sbtest" .. n)
   end
   con:disconnect()
end

-- ---------------------------------------------------------------------------
-- run: connection per thread, helpers for the entry scripts
-- ---------------------------------------------------------------------------
function legacy_connect()
   legacy_drv = sysbench.sql.driver()
   legacy_con = legacy_drv:connect()
   legacy_kind = driver_kind(legacy_drv)
   return legacy_con
end

-- Each thread gets the options (legacy_thread_cfg) and one connection (legacy_con). An entry script
-- that needs more per thread defines legacy_thread_init(), which runs after both are set.
function thread_init()
   legacy_thread_cfg = legacy_cfg()
   legacy_connect()
   if legacy_thread_init ~= nil then
      legacy_thread_init()
   end
end

function thread_done()
   if legacy_con ~= nil then
      legacy_con:disconnect()
      legacy_con = nil
   end
end

-- Table of this event: uniform over sbtest1..N, as in 0.5.
function legacy_table_name(c)
   return "sbtest" .. sysbench.rand.uniform(1, c.tables_count)
end

-- Row id: --rand-type distribution over 1..table-size, as 0.5's sb_rand().
function legacy_rand_id(c)
   return sysbench.rand.default(1, c.table_size)
end
