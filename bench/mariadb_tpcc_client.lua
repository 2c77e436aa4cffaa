-- Maximus's client-side TPC-C transactions for sysbench: the statements Maximus's C profiles send on MariaDB
-- (src/maximus/workloads/tpcc/_profiles.c over _profiles_mariadb.h), in the same batches, each batch one
-- multi-statement query (BEGIN with the first, COMMIT with the last), so the same round trips; for
-- bench/mariadb_tpcc.py. The statements' texts are not written here: the bench writes them, from the workload's own
-- SQL as the C profiles are given it (workloads/tpcc/native.py's statement_texts, NewOrder.rows_sql), to a Lua file
-- that --statements names, each logical statement as its engine statements ("parts": a MariaDB Split), with the
-- logical statement's parameters each part takes and whether its rows are the statement's.
--
-- sysbench 1.0's SQL API reads only a query's first result (its MySQL driver connects with CLIENT_MULTI_STATEMENTS
-- but has no next-result call), so each thread opens its connection with the libmariadb sysbench's driver links,
-- through LuaJIT's FFI, as Maximus's sessions connect (multi-statements, found rows, utf8mb4, Maximus's sql_mode),
-- and reads every result of a batch. The logic between batches is the C profiles': New-Order's 1 % unused item
-- rolled back after its first batch, the by-name customer (60 %) found as the middle of its namesakes, Delivery's
-- districts without a new order skipped, a deadlock or lock wait timeout retried (10 attempts, 1 ms doubling).
-- The mix is the 23-card deck, the homes, NURand's C and the remote rules those of bench/mariadb_tpcc.lua.

local ffi = require("ffi")

ffi.cdef[[
typedef struct st_mysql MYSQL;
typedef struct st_mysql_res MYSQL_RES;
MYSQL *mysql_init(MYSQL *);
MYSQL *mysql_real_connect(MYSQL *, const char *, const char *, const char *, const char *, unsigned int,
                          const char *, unsigned long);
int mysql_set_character_set(MYSQL *, const char *);
int mysql_real_query(MYSQL *, const char *, unsigned long);
MYSQL_RES *mysql_store_result(MYSQL *);
char **mysql_fetch_row(MYSQL_RES *);
unsigned long *mysql_fetch_lengths(MYSQL_RES *);
unsigned int mysql_num_fields(MYSQL_RES *);
void mysql_free_result(MYSQL_RES *);
int mysql_next_result(MYSQL *);
unsigned int mysql_errno(MYSQL *);
const char *mysql_error(MYSQL *);
unsigned int mysql_field_count(MYSQL *);
unsigned long mysql_real_escape_string(MYSQL *, char *, const char *, unsigned long);
void mysql_close(MYSQL *);
int usleep(unsigned int);
]]

sysbench.cmdline.options = {
   warehouses = {"Warehouses of the build", 1},
   c_last = {"NURand C for C_LAST (the run's)", 0},
   c_id = {"NURand C for C_ID", 0},
   ol_i_id = {"NURand C for OL_I_ID", 0},
   statements = {"The Lua file of Maximus's statements, written by bench/mariadb_tpcc.py", ""},
   socket = {"The server's Unix-domain socket", ""},
   database = {"The database", ""},
   user = {"The user", "root"},
}

local CLIENT_FOUND_ROWS, CLIENT_MULTI_STATEMENTS = 2, 65536  -- as Maximus's sessions connect (servers.connect)
local CONFLICTS = {[1213] = true, [1205] = true, [1020] = true}  -- deadlock, lock wait timeout, record changed
local ATTEMPTS = 10
local DISTRICTS, UNUSED_ITEM = 10, 100001
-- the draws both sysbench scripts share, beside this one
local draws = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "mariadb_tpcc_draws.lua")
local uniform, nurand, last_name, other_warehouse = draws.uniform, draws.nurand, draws.last_name, draws.other_warehouse

local lib = ffi.C  -- sysbench links libmariadb: its functions are in the process's global namespace
local given, fixed, sets, begins  -- the statements, cut at their placeholders (prepare)
local conn, escaped, w_id, home_d, next_card

-- -- statements ---------------------------------------------------------------------------------------

-- A logical statement's parts, each cut at its ?s once, as _profiles_mariadb.h cuts them.
local function cut(parts)
   local out = {}
   for n, part in ipairs(parts) do
      local sql, takes, returns = part[1], part[2], part[3]
      local pieces, from = {}, 1
      for at in sql:gmatch("()%?") do
         pieces[#pieces + 1] = sql:sub(from, at - 1)
         from = at + 1
      end
      pieces[#pieces + 1] = sql:sub(from)
      assert(#pieces == #takes + 1, "a part's placeholders and parameters differ: " .. sql)
      out[n] = {pieces = pieces, takes = takes, returns = returns}
   end
   return out
end

local function prepare()
   given = dofile(sysbench.opt.statements)
   fixed, sets, begins = {}, {items = {}, stock = {}, restock = {}, lines = {}}, given.begin
   for name, parts in pairs(given.fixed) do fixed[name] = cut(parts) end
   for count, parts in pairs(given.sets.items) do sets.items[count] = cut(parts) end
   for count, parts in pairs(given.sets.restock) do sets.restock[count] = cut(parts) end
   for count, parts in pairs(given.sets.lines) do sets.lines[count] = cut(parts) end
   for district, counts in pairs(given.sets.stock) do
      sets.stock[district] = {}
      for count, parts in pairs(counts) do sets.stock[district][count] = cut(parts) end
   end
end

-- -- literals, as the C backend writes them --------------------------------------------------------------

local function int(value) return string.format("%d", value) end

local function money(cents) return string.format("%d.%02d", math.floor(cents / 100), cents % 100) end

local function text(value)
   local length = lib.mysql_real_escape_string(conn, escaped, value, #value)
   return "'" .. ffi.string(escaped, tonumber(length)) .. "'"
end

-- A DECIMAL's text in cents (as text_cents in _profiles.h).
local function cents(value)
   local whole, fraction = value:match("^(-?%d+)%.?(%d*)$")
   fraction = (fraction .. "00"):sub(1, 2)
   local magnitude = math.abs(tonumber(whole)) * 100 + tonumber(fraction)
   return value:sub(1, 1) == "-" and -magnitude or magnitude
end

-- -- a batch: one query ---------------------------------------------------------------------------------

local function conflict_or_error(what)
   local errno = lib.mysql_errno(conn)
   if CONFLICTS[errno] then error({conflict = errno}, 0) end
   error(string.format("%s: MariaDB error %d: %s", what, errno, ffi.string(lib.mysql_error(conn))), 0)
end

-- Every result of ``query``, in order: its rows (each a table of strings, nil for NULL), {} without rows.
local function results_of(query)
   if lib.mysql_real_query(conn, query, #query) ~= 0 then conflict_or_error("query") end
   local results = {}
   while true do
      local result = lib.mysql_store_result(conn)
      local rows = {}
      if result == nil then
         if lib.mysql_field_count(conn) ~= 0 then conflict_or_error("result") end
      else
         local columns = lib.mysql_num_fields(result)
         while true do
            local row = lib.mysql_fetch_row(result)
            if row == nil then break end
            local lengths, values = lib.mysql_fetch_lengths(result), {}
            for c = 0, columns - 1 do
               if row[c] ~= nil then values[c + 1] = ffi.string(row[c], tonumber(lengths[c])) end
            end
            rows[#rows + 1] = values
         end
         lib.mysql_free_result(result)
      end
      results[#results + 1] = rows
      local more = lib.mysql_next_result(conn)
      if more > 0 then conflict_or_error("next result") end
      if more < 0 then return results end
   end
end

local function batch(begin)
   return {begin = begin, texts = {}, logical = {}}
end

-- A logical statement queued: each part's text with the literals it takes.
local function queue(b, statement, params)
   local returning = {}
   for _, part in ipairs(statement) do
      local pieces, takes, out = part.pieces, part.takes, {part.pieces[1]}
      for n = 1, #takes do
         out[2 * n] = params[takes[n] + 1]
         out[2 * n + 1] = pieces[n + 1]
      end
      b.texts[#b.texts + 1] = table.concat(out)
      if part.returns then returning[#returning + 1] = #b.texts end
   end
   b.logical[#b.logical + 1] = returning
end

-- The batch sent (BEGIN first, COMMIT last when ``commit``); each logical statement's rows, its returning parts'.
local function send(b, commit)
   if b.begin == nil and #b.texts == 0 and not commit then return {} end
   local statements, skipped = {}, 0
   if b.begin ~= nil then
      statements[1] = b.begin
      skipped = select(2, b.begin:gsub(";", ";")) + 1
   end
   for _, sql in ipairs(b.texts) do statements[#statements + 1] = sql end
   if commit then statements[#statements + 1] = "COMMIT" end
   local results, gathered = results_of(table.concat(statements, ";")), {}
   for k, returning in ipairs(b.logical) do
      local rows = {}
      for _, position in ipairs(returning) do
         for _, row in ipairs(results[skipped + position]) do rows[#rows + 1] = row end
      end
      gathered[k] = rows
   end
   return gathered
end

local function rollback()
   results_of("ROLLBACK")
end

-- -- the inputs, drawn as Maximus draws them ----------------------------------------------------------------

local function customer_id() return nurand(1023, 1, 3000, sysbench.opt.c_id) end

local function customer_name() return last_name(nurand(255, 0, 999, sysbench.opt.c_last)) end

local function by_name() return uniform(1, 100) <= 60 end

-- The namesakes' middle one (2.5.2.2, 2.6.2.2): the row at ceil(n/2) in C_FIRST order.
local function middle(rows, last)
   if #rows == 0 then error("no customer named " .. last, 0) end
   return rows[math.floor((#rows - 1) / 2) + 1]
end

-- -- New-Order (2.4.2.2): _profiles.c's new_order ------------------------------------------------------------

local function draw_new_order()
   local count = uniform(5, 15)
   local rollback_by_rule = uniform(1, 100) == 1
   local lines = {}
   for n = 1, count do
      local item = (rollback_by_rule and n == count) and UNUSED_ITEM or nurand(8191, 1, 100000, sysbench.opt.ol_i_id)
      local remote = sysbench.opt.warehouses > 1 and uniform(1, 100) == 1
      lines[n] = {i_id = item, supply = remote and other_warehouse(w_id) or w_id, quantity = uniform(1, 10)}
   end
   return {d_id = uniform(1, DISTRICTS), c_id = customer_id(), lines = lines}
end

local function stock_key(i_id, supply) return i_id * 1000 + supply end

local function new_order(order)
   local d_id, lines = order.d_id, order.lines
   local items, stocks, seen = {}, {}, {}
   for _, line in ipairs(lines) do  -- sorted(set(items)) and sorted(set((item, supply))), as the profile reads them
      if not seen[line.i_id] then seen[line.i_id] = true; items[#items + 1] = line.i_id end
      local key = stock_key(line.i_id, line.supply)
      if not seen[-key] then seen[-key] = true; stocks[#stocks + 1] = {line.i_id, line.supply} end
   end
   table.sort(items)
   table.sort(stocks, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
   local reads, keys = batch(begins.new_order), {}
   queue(reads, fixed["new_order.customer"], {int(w_id), int(d_id), int(order.c_id)})
   queue(reads, fixed["new_order.district"], {int(w_id), int(d_id)})
   for n, i_id in ipairs(items) do keys[n] = int(i_id) end
   queue(reads, sets.items[#items], keys)
   keys = {}
   for n, stock in ipairs(stocks) do keys[2 * n - 1], keys[2 * n] = int(stock[1]), int(stock[2]) end
   queue(reads, sets.stock[d_id][#stocks], keys)
   local read = send(reads, false)
   if #read[1] == 0 or #read[2] == 0 then error("no customer or district: not a TPC-C database of this scale", 0) end
   local catalogue, found = {}, 0
   for _, row in ipairs(read[3]) do
      catalogue[tonumber(row[1])] = cents(row[2])
      found = found + 1
   end
   if found < #items then  -- 2.4.2.3: an unused item; the transaction is rolled back
      rollback()
      return
   end
   local stock = {}
   for _, row in ipairs(read[4]) do
      stock[stock_key(tonumber(row[1]), tonumber(row[2]))] = {quantity = tonumber(row[3]), dist_info = row[5]}
   end
   local o_id = tonumber(read[2][1][1])
   local changed, changes, all_local, line_values = {}, {}, 1, {}
   for n, line in ipairs(lines) do  -- each line takes its quantity from its stock row, as the profile's take_lines
      local key = stock_key(line.i_id, line.supply)
      local row = stock[key]
      local left = row.quantity
      left = left >= line.quantity + 10 and left - line.quantity or left - line.quantity + 91
      row.quantity = left
      local change = changed[key]
      if change == nil then
         change = {i_id = line.i_id, w_id = line.supply, ytd = 0, order_cnt = 0, remote_cnt = 0}
         changed[key] = change
         changes[#changes + 1] = change
      end
      change.quantity = left
      change.ytd = change.ytd + line.quantity
      change.order_cnt = change.order_cnt + 1
      if line.supply ~= w_id then
         change.remote_cnt = change.remote_cnt + 1
         all_local = 0
      end
      local values = {int(o_id), int(d_id), int(w_id), int(n), int(line.i_id), int(line.supply), int(line.quantity),
                      money(line.quantity * catalogue[line.i_id]), text(row.dist_info)}
      for _, value in ipairs(values) do line_values[#line_values + 1] = value end
   end
   local writes, restock = batch(nil), {}
   queue(writes, fixed["new_order.next_order"], {int(o_id + 1), int(w_id), int(d_id)})
   queue(writes, fixed["new_order.order"], {int(o_id), int(d_id), int(w_id), int(order.c_id), int(#lines),
                                           int(all_local)})
   queue(writes, fixed["new_order.new_order"], {int(o_id), int(d_id), int(w_id)})
   for _, change in ipairs(changes) do
      for _, value in ipairs({change.i_id, change.w_id, change.quantity, change.ytd, change.order_cnt,
                              change.remote_cnt}) do
         restock[#restock + 1] = int(value)
      end
   end
   queue(writes, sets.restock[#changes], restock)
   queue(writes, sets.lines[#lines], line_values)
   send(writes, true)
end

-- -- Payment (2.5.2.2): _profiles.c's payment --------------------------------------------------------------

local function draw_payment()
   local d_id = uniform(1, DISTRICTS)
   local remote = sysbench.opt.warehouses > 1 and uniform(1, 100) <= 15
   local c_w_id = remote and other_warehouse(w_id) or w_id
   local c_d_id = remote and uniform(1, DISTRICTS) or d_id
   local named = by_name()
   return {d_id = d_id, c_w_id = c_w_id, c_d_id = c_d_id, c_id = (not named) and customer_id() or nil,
           c_last = named and customer_name() or nil, paid = uniform(100, 500000)}
end

local function payment(pay)
   local paid, d_id, c_w_id, c_d_id = money(pay.paid), pay.d_id, pay.c_w_id, pay.c_d_id
   local first = batch(begins.payment)
   queue(first, fixed["payment.warehouse"], {paid, int(w_id)})
   queue(first, fixed["payment.district"], {paid, int(w_id), int(d_id)})
   if pay.c_last == nil then
      queue(first, fixed["payment.customer"], {int(c_w_id), int(c_d_id), int(pay.c_id)})
   else
      queue(first, fixed["payment.by_name"], {int(c_w_id), int(c_d_id), text(pay.c_last)})
   end
   local read = send(first, false)
   local w_name, d_name, c_id, customer = read[1][1][1], read[2][1][1], pay.c_id, nil
   if pay.c_last == nil then
      customer = read[3][1]
   else  -- the customer chosen by name, read (locked) in a batch of its own
      c_id = tonumber(middle(read[3], pay.c_last)[1])
      local again = batch(nil)
      queue(again, fixed["payment.customer"], {int(c_w_id), int(c_d_id), int(c_id)})
      customer = send(again, false)[1][1]
   end
   if customer == nil then error("no customer: not a TPC-C database of this scale", 0) end
   local last, key = batch(nil), {int(c_w_id), int(c_d_id), int(c_id)}
   if customer[11] == "BC" then
      local entry = string.format("%d %d %d %d %d %s ", c_id, c_d_id, c_w_id, d_id, w_id, paid)
      queue(last, fixed["payment.bad_credit"], {paid, paid, text(entry), key[1], key[2], key[3]})
   else
      queue(last, fixed["payment.good_credit"], {paid, paid, key[1], key[2], key[3]})
   end
   queue(last, fixed["payment.history"], {int(c_id), int(c_d_id), int(c_w_id), int(d_id), int(w_id), paid,
                                          text(w_name .. "    " .. d_name)})
   send(last, true)
end

-- -- Order-Status (2.6.2.2): _profiles.c's order_status ----------------------------------------------------

local function draw_order_status()
   local d_id, named = uniform(1, DISTRICTS), by_name()
   return {d_id = d_id, c_id = (not named) and customer_id() or nil, c_last = named and customer_name() or nil}
end

local function order_status(status)
   local d_id, c_id, begin = status.d_id, status.c_id, begins.order_status
   if c_id == nil then  -- the namesakes, all read in a batch of their own; the middle one's number
      local named = batch(begin)
      queue(named, fixed["order_status.by_name"], {int(w_id), int(d_id), text(status.c_last)})
      c_id = tonumber(middle(send(named, false)[1], status.c_last)[1])
      begin = nil
   end
   local latest = batch(begin)
   if status.c_id ~= nil then queue(latest, fixed["order_status.customer"], {int(w_id), int(d_id), int(c_id)}) end
   queue(latest, fixed["order_status.order"], {int(w_id), int(d_id), int(c_id)})
   queue(latest, fixed["order_status.lines"], {int(w_id), int(d_id), int(w_id), int(d_id), int(c_id)})
   send(latest, true)
end

-- -- Delivery (2.7.4.2): _profiles.c's delivery --------------------------------------------------------------

local function draw_delivery() return {carrier = uniform(1, 10)} end

local function delivery(deliver)
   local oldest = batch(begins.delivery)
   for d_id = 1, DISTRICTS do queue(oldest, fixed["delivery.oldest"], {int(w_id), int(d_id)}) end
   local found, delivered = {}, batch(nil)
   for d_id, rows in ipairs(send(oldest, false)) do  -- none: the district is skipped
      if #rows > 0 and rows[1][1] ~= nil then
         found[#found + 1] = {d_id = d_id, o_id = rows[1][1]}
         local key = {int(w_id), int(d_id), rows[1][1]}
         queue(delivered, fixed["delivery.delete"], key)
         queue(delivered, fixed["delivery.carrier"], {int(deliver.carrier), key[1], key[2], key[3]})
         queue(delivered, fixed["delivery.lines"], key)
         queue(delivered, fixed["delivery.amount"], key)
      end
   end
   local done, paid = send(delivered, false), batch(nil)
   for n, order in ipairs(found) do
      local carried, amount = done[4 * n - 2], done[4 * n]
      if #done[4 * n - 3] == 0 or #carried == 0 or #amount == 0 or amount[1][1] == nil then
         error(string.format("the new order %s of district %d vanished under its lock", order.o_id, order.d_id), 0)
      end
      queue(paid, fixed["delivery.customer"], {money(cents(amount[1][1])), int(w_id), int(order.d_id),
                                               carried[1][1]})
   end
   send(paid, true)
end

-- -- Stock-Level (2.8.2.2) ------------------------------------------------------------------------------------

local function draw_stock_level() return {threshold = uniform(10, 20)} end

local function stock_level(level)
   local low = batch(begins.stock_level)
   queue(low, fixed["stock_level.low"], {int(w_id), int(home_d), int(level.threshold)})
   send(low, true)
end

-- -- the terminal ---------------------------------------------------------------------------------------------

local TRANSACTIONS = {
   new_order = {draw_new_order, new_order}, payment = {draw_payment, payment},
   order_status = {draw_order_status, order_status}, delivery = {draw_delivery, delivery},
   stock_level = {draw_stock_level, stock_level},
}

function thread_init()
   prepare()
   conn = lib.mysql_init(nil)
   local flags = CLIENT_FOUND_ROWS + CLIENT_MULTI_STATEMENTS
   if lib.mysql_real_connect(conn, nil, sysbench.opt.user, nil, sysbench.opt.database, 0, sysbench.opt.socket,
                             flags) == nil or lib.mysql_set_character_set(conn, "utf8mb4") ~= 0 then
      error("cannot connect to MariaDB: " .. ffi.string(lib.mysql_error(conn)))
   end
   escaped = ffi.new("char[?]", 1024)
   results_of(given.session)  -- Maximus's sql_mode (PIPES_AS_CONCAT: Payment's bad credit uses ||)
   w_id, home_d = draws.home(sysbench.tid)
   next_card = draws.dealer()
end

-- One transaction of the deck, retried on a conflict with the same inputs, as Maximus's retry policy does.
function event()
   local transaction = TRANSACTIONS[next_card()]
   local inputs = transaction[1]()
   for attempt = 1, ATTEMPTS do
      local ok, failure = pcall(transaction[2], inputs)
      if ok then return end
      pcall(rollback)
      if type(failure) ~= "table" then error(failure, 0) end
      if attempt < ATTEMPTS then lib.usleep(1000 * 2 ^ (attempt - 1)) end
   end
   error("a transaction conflicted " .. ATTEMPTS .. " times", 0)
end

function thread_done()
   lib.mysql_close(conn)
end
