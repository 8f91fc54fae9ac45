-- Shared by kv.lua (loaded with require): table names and the SQL of a small key-value workload that runs
-- on MySQL/MariaDB and PostgreSQL alike.
local M = {}

function M.table_name(i)
  return "kv_items" .. i
end

function M.create(con, i, rows)
  con:query("DROP TABLE IF EXISTS " .. M.table_name(i))
  con:query("CREATE TABLE " .. M.table_name(i) .. " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
  local values = {}
  for id = 1, rows do
    values[#values + 1] = "(" .. id .. "," .. (id * 7) % 1000 .. ")"
    if #values == 500 or id == rows then
      con:query("INSERT INTO " .. M.table_name(i) .. " (id, v) VALUES " .. table.concat(values, ","))
      values = {}
    end
  end
end

function M.drop(con, i)
  con:query("DROP TABLE IF EXISTS " .. M.table_name(i))
end

return M
