-- The new-order transaction of orders.lua.
local M = {}
local counter = 0

function M.new_order(con, w_id, thread)
  counter = counter + 1
  con:query(string.format("SELECT w_name FROM sbx_warehouse WHERE w_id = %d", w_id))
  con:query(string.format("INSERT INTO sbx_order VALUES (%d, %d, %d, %d)", counter, w_id, thread,
                          sysbench.rand.uniform(1, 100)))
  con:query(string.format("SELECT w.w_name, o.o_amount FROM sbx_warehouse w JOIN sbx_order o ON o.o_w_id = w.w_id"
                          .. " WHERE o.o_id = %d AND o.o_thread = %d", counter, thread))
end

return M
