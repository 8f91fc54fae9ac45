-- tpcc_like_check: the `check` command of benchapp's tpcc_like test workload (TPC-C-shaped, not
-- TPC-C). For every table set it verifies:
--   1. it holds exactly --scale warehouses and DISTRICTS districts per warehouse;
--   2. every district's d_next_o_id - 1 equals both the max and the count of its order ids
--      (committed new orders took consecutive ids, rolled-back ones left no trace);
--   3. every warehouse's w_ytd equals the sum of its districts' d_ytd.
-- It prints one "check FAILED: ..." line per problem, or one "check passed: ..." line.
local schema = require("tpcc_like_schema")
local M = {}

local function rows(con, sql)
  local rs = con:query(sql)
  local out = {}
  for _ = 1, rs.nrows do
    local row = rs:fetch_row()
    local copy = {}
    for i = 1, rs.nfields do
      copy[i] = row[i]
    end
    out[#out + 1] = copy
  end
  return out
end

function M.run(con, tables, scale)
  local failures, districts = 0, 0
  local function fail(fmt, ...)
    failures = failures + 1
    print("check FAILED: " .. string.format(fmt, ...))
  end

  for t = 1, tables do
    local w_count = tonumber(rows(con, string.format("SELECT COUNT(*) FROM warehouse%d", t))[1][1])
    local d_count = tonumber(rows(con, string.format("SELECT COUNT(*) FROM district%d", t))[1][1])
    if w_count ~= scale or d_count ~= scale * schema.DISTRICTS then
      fail("table set %d has %d warehouses and %d districts, expected %d and %d (same --scale as prepare?)",
           t, w_count, d_count, scale, scale * schema.DISTRICTS)
    end

    for _, r in ipairs(rows(con, string.format([[
        SELECT d.d_w_id, d.d_id, d.d_next_o_id, COUNT(o.o_id), MAX(o.o_id)
          FROM district%d d LEFT JOIN orders%d o ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
         GROUP BY d.d_w_id, d.d_id, d.d_next_o_id
         ORDER BY d.d_w_id, d.d_id]], t, t))) do
      local w, d, next_o_id, count, max = tonumber(r[1]), tonumber(r[2]), tonumber(r[3]),
                                          tonumber(r[4]), tonumber(r[5]) or 0
      districts = districts + 1
      if next_o_id - 1 ~= max or next_o_id - 1 ~= count then
        fail("district%d w_id=%d d_id=%d: d_next_o_id=%d but orders have max(o_id)=%d, count=%d",
             t, w, d, next_o_id, max, count)
      end
    end

    for _, r in ipairs(rows(con, string.format([[
        SELECT w.w_id, w.w_ytd, SUM(d.d_ytd)
          FROM warehouse%d w JOIN district%d d ON d.d_w_id = w.w_id
         GROUP BY w.w_id, w.w_ytd
         ORDER BY w.w_id]], t, t))) do
      if tonumber(r[2]) ~= tonumber(r[3]) then
        fail("warehouse%d w_id=%s: w_ytd=%s but the sum of its districts' d_ytd is %s", t, r[1], r[2], r[3])
      end
    end
  end

  if failures > 0 then
    print(string.format("check failed: %d problem(s) in %d table set(s)", failures, tables))
    return false
  end
  print(string.format("check passed: %d districts consistent (%d table set(s), %d warehouse(s) each)",
                      districts, tables, scale))
  return true
end

return M
