-- The tables of orders.lua: one row per warehouse, and their orders.
local M = {}

function M.create(con, warehouses)
  con:query("CREATE TABLE sbx_warehouse (w_id INTEGER PRIMARY KEY, w_name VARCHAR(20), w_ytd INTEGER)")
  con:query("CREATE TABLE sbx_order (o_id INTEGER, o_w_id INTEGER, o_thread INTEGER, o_amount INTEGER)")
  for w = 1, warehouses do
    con:query(string.format("INSERT INTO sbx_warehouse VALUES (%d, 'w%d', 0)", w, w))
  end
end

function M.drop(con)
  con:query("DROP TABLE IF EXISTS sbx_order")
  con:query("DROP TABLE IF EXISTS sbx_warehouse")
end

return M
