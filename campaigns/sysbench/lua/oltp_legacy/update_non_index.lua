-- benchapp: sysbench 0.5-era update_non_index.lua on the sysbench 1.0 Lua
-- API. One event = one autocommit UPDATE of the non-indexed column c:
--   UPDATE sbtest<random table> SET c='<random>' WHERE id=<--rand-type id>
-- Shares tables and options with oltp.lua (prepare/cleanup are the same).

local function script_dir()
   local p = sysbench.cmdline.script_path
   if p == nil or p == "" then
      p = string.gsub(debug.getinfo(1, "S").source, "^@", "")
   end
   return string.match(p, "^(.*/)") or "./"
end
dofile(script_dir() .. "common.lua")

function event()
   local cfg, con = legacy_thread_cfg, legacy_con
   con:query(string.format("UPDATE %s SET c='%s' WHERE id=%d",
                           legacy_table_name(cfg), legacy_c_value(),
                           legacy_rand_id(cfg)))
end
