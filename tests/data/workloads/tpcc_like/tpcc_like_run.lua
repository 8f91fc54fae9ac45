-- tpcc_like_run: the transactions of benchapp's tpcc_like test workload (TPC-C-shaped, not TPC-C).
-- new_order(), payment() and order_status() are deliberately GLOBAL functions taking no arguments
-- (each picks its own table set, warehouse, district and customer), so that a wrapper script can
-- replace _G.new_order and count or time the calls. The module itself returns open/close/rollback.
local ffi = require("ffi")
local schema = require("tpcc_like_schema")

-- sysbench 1.0.20 declares the sb_counter_type enum in its own cdef but not sb_counter_inc()
-- (the binary exports it); declare it as Percona's sysbench-tpcc does.
ffi.cdef[[
void sb_counter_inc(int, sb_counter_type);
]]

local M = {}
local con               -- this thread's connection, opened by thread_init() through M.open()

function M.open()
  con = sysbench.sql.driver():connect()
end

function M.close()
  if con then
    con:disconnect()
    con = nil
  end
end

function M.rollback()
  if con then
    pcall(con.query, con, "ROLLBACK")
  end
end

local function pick()
  return sysbench.rand.uniform(1, sysbench.opt.tables),
         sysbench.rand.uniform(1, sysbench.opt.scale),
         sysbench.rand.uniform(1, schema.DISTRICTS),
         sysbench.rand.uniform(1, sysbench.opt.customers)
end

-- New order: read the warehouse and customer, take the district's next order id under a row lock,
-- bump it and insert the order. 1 % of them then roll back by design (TPC-C's "unused item"); like
-- sysbench-tpcc they are counted in sysbench's error counter ("ignored errors") and return normally.
function new_order()
  local t, w, d, c = pick()
  local rollback = sysbench.rand.uniform(1, 100) == 1
  con:query("BEGIN")
  con:query(string.format("SELECT w_tax FROM warehouse%d WHERE w_id = %d", t, w))
  con:query(string.format("SELECT c_discount, c_last FROM customer%d WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
                          t, w, d, c))
  local rs = con:query(string.format(
    "SELECT d_next_o_id, d_tax FROM district%d WHERE d_w_id = %d AND d_id = %d FOR UPDATE", t, w, d))
  local o_id = tonumber(rs:fetch_row()[1])
  con:query(string.format("UPDATE district%d SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d",
                          t, w, d))
  con:query(string.format("INSERT INTO orders%d (o_w_id, o_d_id, o_id, o_c_id, o_ol_cnt) VALUES (%d, %d, %d, %d, %d)",
                          t, w, d, o_id, c, sysbench.rand.uniform(5, 15)))
  if rollback then
    ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
    con:query("ROLLBACK")
    return
  end
  con:query("COMMIT")
end

-- Payment: add the amount to the warehouse's and the district's year-to-date, take it off the
-- customer's balance, record it in history.
function payment()
  local t, w, d, c = pick()
  local amount = sysbench.rand.uniform(100, 500000)
  con:query("BEGIN")
  con:query(string.format("UPDATE warehouse%d SET w_ytd = w_ytd + %d WHERE w_id = %d", t, amount, w))
  con:query(string.format("UPDATE district%d SET d_ytd = d_ytd + %d WHERE d_w_id = %d AND d_id = %d",
                          t, amount, w, d))
  con:query(string.format("UPDATE customer%d SET c_balance = c_balance - %d, c_payment_cnt = c_payment_cnt + 1"
                          .. " WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", t, amount, w, d, c))
  con:query(string.format("INSERT INTO history%d (h_w_id, h_d_id, h_c_id, h_amount) VALUES (%d, %d, %d, %d)",
                          t, w, d, c, amount))
  con:query("COMMIT")
end

-- Order status (read only): the customer and their latest order.
function order_status()
  local t, w, d, c = pick()
  con:query("BEGIN")
  con:query(string.format("SELECT c_balance, c_last FROM customer%d WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
                          t, w, d, c))
  con:query(string.format("SELECT o_id, o_ol_cnt FROM orders%d WHERE o_w_id = %d AND o_d_id = %d AND o_c_id = %d"
                          .. " ORDER BY o_id DESC LIMIT 1", t, w, d, c))
  con:query("COMMIT")
end

return M
