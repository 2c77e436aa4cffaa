-- The TPC-C mix for sysbench, calling Maximus's MariaDB stored functions (src/maximus/workloads/tpcc/sql/
-- mariadb.sql) with Maximus's inputs: a C client doing what Maximus's server-side terminals do, for
-- bench/mariadb_tpcc.py. Each thread deals the 23-card deck of 5.2.4.2 (10 New-Order, 10 Payment, 1 each of the
-- others), shuffled per pass; its home warehouse and district are dealt as Maximus deals them; NURand uses the
-- run's C (given by the caller); with one warehouse nothing is remote (bench/mariadb_tpcc_draws.lua). New-Order's 1 % unused item raises
-- SQLSTATE MX001 (error 1644), which sysbench ignores when told to (--mysql-ignore-errors) and counts.

sysbench.cmdline.options = {
   warehouses = {"Warehouses of the build", 1},
   c_last = {"NURand C for C_LAST (the run's)", 0},
   c_id = {"NURand C for C_ID", 0},
   ol_i_id = {"NURand C for OL_I_ID", 0},
}

-- the draws both sysbench scripts share, beside this one
local draws = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "mariadb_tpcc_draws.lua")
local uniform, nurand, last_name, other_warehouse = draws.uniform, draws.nurand, draws.last_name, draws.other_warehouse

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   w_id, home_d = draws.home(sysbench.tid)
   next_card = draws.dealer()
end

local function customer()
   if uniform(1, 100) <= 60 then
      return "NULL", "'" .. last_name(nurand(255, 0, 999, sysbench.opt.c_last)) .. "'"
   end
   return tostring(nurand(1023, 1, 3000, sysbench.opt.c_id)), "NULL"
end

local function new_order()
   local d_id, c_id, count = uniform(1, 10), nurand(1023, 1, 3000, sysbench.opt.c_id), uniform(5, 15)
   local rollback = uniform(1, 100) == 1
   local items, supplies, quantities = {}, {}, {}
   for n = 1, count do
      items[n] = (rollback and n == count) and 100001 or nurand(8191, 1, 100000, sysbench.opt.ol_i_id)
      local remote = sysbench.opt.warehouses > 1 and uniform(1, 100) == 1
      supplies[n] = remote and other_warehouse(w_id) or w_id
      quantities[n] = uniform(1, 10)
   end
   con:query(string.format("SELECT tpcc_new_order(%d, %d, %d, '[%s]', '[%s]', '[%s]', UTC_TIMESTAMP(6))", w_id, d_id,
             c_id, table.concat(items, ","), table.concat(supplies, ","), table.concat(quantities, ",")))
end

local function payment()
   local d_id = uniform(1, 10)
   local c_w_id, c_d_id = w_id, d_id
   if sysbench.opt.warehouses > 1 and uniform(1, 100) <= 15 then
      c_w_id, c_d_id = other_warehouse(w_id), uniform(1, 10)
   end
   local c_id, c_last = customer()
   con:query(string.format("SELECT tpcc_payment(%d, %d, %d, %d, %s, %s, %d.%02d, UTC_TIMESTAMP(6))", w_id, d_id,
             c_w_id, c_d_id, c_id, c_last, uniform(1, 4999), uniform(0, 99)))
end

local function order_status()
   local c_id, c_last = customer()
   con:query(string.format("SELECT tpcc_order_status(%d, %d, %s, %s)", w_id, uniform(1, 10), c_id, c_last))
end

local function delivery()
   con:query(string.format("SELECT tpcc_delivery(%d, %d, UTC_TIMESTAMP(6))", w_id, uniform(1, 10)))
end

local function stock_level()
   con:query(string.format("SELECT tpcc_stock_level(%d, %d, %d)", w_id, home_d, uniform(10, 20)))
end

local TRANSACTIONS = {new_order = new_order, payment = payment, order_status = order_status, delivery = delivery,
                      stock_level = stock_level}

function event()
   TRANSACTIONS[next_card()]()
end

function thread_done()
   con:disconnect()
end
