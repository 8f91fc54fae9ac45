-- A consistency look at the end of each thread of orders.lua (a file in a folder: `require("lib.orders_check")`).
local M = {}

function M.totals(con)
  con:query("SELECT COUNT(*) FROM sbx_order")
end

return M
