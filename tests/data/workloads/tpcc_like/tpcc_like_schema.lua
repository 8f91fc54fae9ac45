-- tpcc_like_schema: the tables of benchapp's tpcc_like test workload (TPC-C-shaped, not TPC-C), and
-- their load. Table set t holds warehouse<t>, district<t>, customer<t>, orders<t> and history<t>.
-- Money is kept in integer cents so the consistency checks can compare sums exactly.
local M = {}

M.DISTRICTS = 10            -- districts per warehouse, as in TPC-C
M.W_YTD = 30000000          -- initial warehouse year-to-date, cents (= DISTRICTS * D_YTD)
M.D_YTD = 3000000           -- initial district year-to-date, cents

function M.create(con, t)
  con:query(string.format([[
    CREATE TABLE warehouse%d (
      w_id INTEGER NOT NULL, w_name VARCHAR(10) NOT NULL, w_tax INTEGER NOT NULL,
      w_ytd BIGINT NOT NULL,
      PRIMARY KEY (w_id))]], t))
  con:query(string.format([[
    CREATE TABLE district%d (
      d_w_id INTEGER NOT NULL, d_id INTEGER NOT NULL, d_name VARCHAR(10) NOT NULL,
      d_tax INTEGER NOT NULL, d_ytd BIGINT NOT NULL, d_next_o_id INTEGER NOT NULL,
      PRIMARY KEY (d_w_id, d_id))]], t))
  con:query(string.format([[
    CREATE TABLE customer%d (
      c_w_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_id INTEGER NOT NULL,
      c_last VARCHAR(16) NOT NULL, c_discount INTEGER NOT NULL, c_balance BIGINT NOT NULL,
      c_payment_cnt INTEGER NOT NULL,
      PRIMARY KEY (c_w_id, c_d_id, c_id))]], t))
  con:query(string.format([[
    CREATE TABLE orders%d (
      o_w_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_id INTEGER NOT NULL,
      o_c_id INTEGER NOT NULL, o_ol_cnt INTEGER NOT NULL,
      PRIMARY KEY (o_w_id, o_d_id, o_id))]], t))
  con:query(string.format("CREATE INDEX orders%d_customer ON orders%d (o_w_id, o_d_id, o_c_id, o_id)", t, t))
  con:query(string.format([[
    CREATE TABLE history%d (
      h_w_id INTEGER NOT NULL, h_d_id INTEGER NOT NULL, h_c_id INTEGER NOT NULL,
      h_amount INTEGER NOT NULL)]], t))
end

-- One warehouse at a time, one transaction each; customer c starts with order c, so every district
-- starts with d_next_o_id = customers + 1.
function M.load(con, t, scale, customers)
  for w = 1, scale do
    con:query("BEGIN")
    con:query(string.format("INSERT INTO warehouse%d VALUES (%d, 'w%d', %d, %d)",
                            t, w, w, sysbench.rand.uniform(0, 2000), M.W_YTD))
    local districts = {}
    for d = 1, M.DISTRICTS do
      districts[#districts + 1] = string.format("(%d, %d, 'd%d', %d, %d, %d)",
                                                w, d, d, sysbench.rand.uniform(0, 2000), M.D_YTD, customers + 1)
    end
    con:query(string.format("INSERT INTO district%d VALUES %s", t, table.concat(districts, ", ")))
    for d = 1, M.DISTRICTS do
      local rows, orders = {}, {}
      for c = 1, customers do
        rows[#rows + 1] = string.format("(%d, %d, %d, 'c%d', %d, -1000, 1)",
                                        w, d, c, c, sysbench.rand.uniform(0, 5000))
        orders[#orders + 1] = string.format("(%d, %d, %d, %d, %d)", w, d, c, c, sysbench.rand.uniform(5, 15))
      end
      con:query(string.format("INSERT INTO customer%d VALUES %s", t, table.concat(rows, ", ")))
      con:query(string.format("INSERT INTO orders%d VALUES %s", t, table.concat(orders, ", ")))
    end
    con:query("COMMIT")
  end
end

function M.drop(con, t)
  for _, name in ipairs({"history", "orders", "customer", "district", "warehouse"}) do
    con:query(string.format("DROP TABLE IF EXISTS %s%d", name, t))
  end
end

return M
