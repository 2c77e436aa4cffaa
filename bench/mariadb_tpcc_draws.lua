-- Maximus's TPC-C inputs for sysbench, shared by bench/mariadb_tpcc.lua (the stored functions) and
-- bench/mariadb_tpcc_client.lua (the client-side statements), drawn from sysbench's own generator: a thread's home
-- warehouse and district as Maximus deals them, the 23-card deck of 5.2.4.2 (10 New-Order, 10 Payment, 1 each of the
-- others) shuffled per pass, NURand (2.1.6), a customer's last name (4.3.2.3) and a warehouse other than the home.

local draws = {}

local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
local DECK = {}
for _ = 1, 10 do table.insert(DECK, "new_order") end
for _ = 1, 10 do table.insert(DECK, "payment") end
for _, name in ipairs({"order_status", "delivery", "stock_level"}) do table.insert(DECK, name) end

function draws.uniform(low, high) return sysbench.rand.uniform(low, high) end

function draws.nurand(a, x, y, c)
   return (((bit.bor(draws.uniform(0, a), draws.uniform(x, y))) + c) % (y - x + 1)) + x
end

function draws.last_name(n)
   return SYLLABLES[math.floor(n / 100) + 1] .. SYLLABLES[math.floor(n / 10) % 10 + 1] .. SYLLABLES[n % 10 + 1]
end

function draws.other_warehouse(home)
   local warehouses = sysbench.opt.warehouses
   return (home + draws.uniform(0, warehouses - 2)) % warehouses + 1
end

-- This thread's home warehouse and district: Maximus's home_of, terminals dealt over the warehouses in turn
function draws.home(tid)
   local warehouses = sysbench.opt.warehouses
   return tid % warehouses + 1, math.floor(tid / warehouses) % 10 + 1
end

-- A dealer of this thread's cards: each call the next transaction's name, the deck shuffled again once dealt
function draws.dealer()
   local deck, card = {}, #DECK + 1
   return function()
      if card > #DECK then
         for i = 1, #DECK do deck[i] = DECK[i] end
         for i = #deck, 2, -1 do
            local j = draws.uniform(1, i)
            deck[i], deck[j] = deck[j], deck[i]
         end
         card = 1
      end
      card = card + 1
      return deck[card - 1]
   end
end

return draws
