-- benchapp: sysbench 0.5-era oltp.lua on the sysbench 1.0 Lua API.
--
-- One transaction per event, on one table chosen at random:
--   BEGIN
--   --oltp-point-selects      x SELECT c FROM t WHERE id=?
--   --oltp-simple-ranges      x SELECT c FROM t WHERE id BETWEEN ? AND ?
--   --oltp-sum-ranges         x SELECT SUM(K) FROM t WHERE id BETWEEN ...
--   --oltp-order-ranges       x SELECT c ... BETWEEN ... ORDER BY c
--   --oltp-distinct-ranges    x SELECT DISTINCT c ... BETWEEN ... ORDER BY c
--   --oltp-index-updates      x UPDATE t SET k=k+1 WHERE id=?
--   --oltp-non-index-updates  x UPDATE t SET c='<random>' WHERE id=?
--   --oltp-delete-inserts     x DELETE FROM t WHERE id=?; INSERT (same id)
--   COMMIT
-- Range SELECTs are skipped with --oltp-range-selects=off, all SELECTs with
-- --oltp-write-only, all writes with --oltp-read-only, BEGIN/COMMIT with
-- --oltp-skip-trx. With the MyISAM engine BEGIN/COMMIT become
-- LOCK TABLES .../UNLOCK TABLES, as in 0.5.
-- Defaults (10/1/1/1/1 reads, 1/1/1 writes) give 14 reads, 4 writes and
-- 2 other statements per transaction.

-- sysbench 1.0 does not search the script's directory: load common.lua
-- from the directory of this file (see common.lua).
local function script_dir()
   local p = sysbench.cmdline.script_path
   if p == nil or p == "" then
      p = string.gsub(debug.getinfo(1, "S").source, "^@", "")
   end
   return string.match(p, "^(.*/)") or "./"
end
dofile(script_dir() .. "common.lua")

local begin_sql, commit_sql

function legacy_thread_init()
   local cfg = legacy_thread_cfg
   if legacy_kind == "mysql" and string.lower(cfg.engine) == "myisam" then
      local locks = {}
      for n = 1, cfg.tables_count do
         locks[n] = string.format("sbtest%d WRITE", n)
      end
      begin_sql = "LOCK TABLES " .. table.concat(locks, ", ")
      commit_sql = "UNLOCK TABLES"
   else
      begin_sql = "BEGIN"
      commit_sql = "COMMIT"
   end
end

local function range_where(c)
   local first = legacy_rand_id(c)
   return string.format(" WHERE id BETWEEN %d AND %d", first,
                        first + c.range_size - 1)
end

function event()
   local c, con = legacy_thread_cfg, legacy_con
   local t = legacy_table_name(c)

   if not c.skip_trx then
      con:query(begin_sql)
   end

   if not c.write_only then
      for _ = 1, c.point_selects do
         con:query(string.format("SELECT c FROM %s WHERE id=%d", t,
                                 legacy_rand_id(c)))
      end
      if c.range_selects then
         for _ = 1, c.simple_ranges do
            con:query("SELECT c FROM " .. t .. range_where(c))
         end
         for _ = 1, c.sum_ranges do
            con:query("SELECT SUM(K) FROM " .. t .. range_where(c))
         end
         for _ = 1, c.order_ranges do
            con:query("SELECT c FROM " .. t .. range_where(c) ..
                         " ORDER BY c")
         end
         for _ = 1, c.distinct_ranges do
            con:query("SELECT DISTINCT c FROM " .. t .. range_where(c) ..
                         " ORDER BY c")
         end
      end
   end

   if not c.read_only then
      for _ = 1, c.index_updates do
         con:query(string.format("UPDATE %s SET k=k+1 WHERE id=%d", t,
                                 legacy_rand_id(c)))
      end
      for _ = 1, c.non_index_updates do
         con:query(string.format("UPDATE %s SET c='%s' WHERE id=%d", t,
                                 legacy_c_value(), legacy_rand_id(c)))
      end
      for _ = 1, c.delete_inserts do
         local id = legacy_rand_id(c)
         con:query(string.format("DELETE FROM %s WHERE id=%d", t, id))
         con:query(string.format(
                      "INSERT INTO %s (id, k, c, pad) VALUES " ..
                         "(%d, %d, '%s', '%s')",
                      t, id, legacy_rand_id(c), legacy_c_value(),
                      legacy_pad_value()))
      end
   end

   if not c.skip_trx then
      con:query(commit_sql)
   end
end

-- An event restarted after an ignored error (--mysql-ignore-errors) must not
-- carry on inside a half-done (PostgreSQL: aborted) transaction.
function sysbench.hooks.before_restart_event(err)
   local con = legacy_con
   if con ~= nil and not legacy_thread_cfg.skip_trx then
      pcall(function() con:query(commit_sql == "COMMIT" and "ROLLBACK"
                                    or commit_sql) end)
   end
end
