-- TPC-C transactions as PL/pgSQL functions: one round trip per business transaction. Each reads what its
-- profile in clause 2 reads and returns the data of its output screen (workloads/tpcc/screens.py), as the
-- client-side transactions do; a test holds the two to each other.
-- Isolation (3.4.0.1): at read committed, every row read and then changed is locked before it is read (an
-- UPDATE ... RETURNING, or FOR UPDATE), and Order-Status reads everything in one statement, one snapshot.
-- Errors are never caught here: serialization failures and deadlocks reach the driver's retry policy.
-- The New-Order rollback of 2.4.2.3 raises SQLSTATE MX001, which the driver counts as "rolled back".
-- Every run installs them afresh, so a database built by an older Maximus runs this version's functions.

DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE proname LIKE 'tpcc\_%' AND pronamespace = 'public'::regnamespace
    LOOP
        EXECUTE 'DROP FUNCTION ' || f;
    END LOOP;
END $$;

-- New-Order in two statements instead of three per order line: each statement a PL/pgSQL function runs costs
-- the server an executor start-up. The first takes the district's next order number (locking the district row
-- first, as 2.4.2.2 orders it), enters the order and reads the customer and the warehouse; the second reads
-- every line's item, once, updates the stock rows and inserts the order lines.
CREATE OR REPLACE FUNCTION tpcc_new_order(
    p_w_id int, p_d_id int, p_c_id int, p_i_ids int[], p_supply int[], p_qty int[], p_entry timestamp,
    OUT o_id int, OUT c_last text, OUT c_credit text, OUT c_discount numeric, OUT w_tax numeric, OUT d_tax numeric,
    OUT o_entry_d timestamp, OUT total_amount numeric, OUT i_names text[], OUT i_prices numeric[],
    OUT s_quantities int[], OUT brand_generic text[], OUT ol_amounts numeric[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_o_id int; v_count int := array_length(p_i_ids, 1); v_found int; v_data text[]; v_rounds int := 0;
    v_numbers int[] := '{}'; v_new int[]; v_quantities int[]; v_brands text[]; v_amounts numeric[];
BEGIN
    WITH taken AS (
        UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id
        RETURNING d_next_o_id - 1 AS o_id, d_tax),
    entered AS (
        INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        SELECT o_id, p_d_id, p_w_id, p_c_id, p_entry, NULL, v_count,
               CASE WHEN p_supply <@ ARRAY[p_w_id] THEN 1 ELSE 0 END FROM taken),
    queued AS (
        INSERT INTO new_order (no_o_id, no_d_id, no_w_id) SELECT o_id, p_d_id, p_w_id FROM taken)
    SELECT taken.o_id, taken.d_tax, c_discount, c_last, c_credit, w_tax
      INTO v_o_id, d_tax, c_discount, c_last, c_credit, w_tax
      FROM taken, customer, warehouse
     WHERE w_id = p_w_id AND c_w_id = w_id AND c_d_id = p_d_id AND c_id = p_c_id;
    o_id := v_o_id;
    o_entry_d := p_entry;
    s_quantities := '{}'; brand_generic := '{}'; ol_amounts := '{}';
    -- The items are read by the first round, then kept (v_data): each line's item is read once, in one
    -- snapshot. An item ordered twice from one warehouse is one stock row, which one UPDATE changes only
    -- once: a round takes the first line not yet entered of each stock row, so that rows change in line order.
    WHILE cardinality(v_numbers) < v_count LOOP
        WITH item_line AS (
            SELECT l.n, l.i_id, l.supply_w_id, l.qty, coalesce(l.i_price, item.i_price) AS i_price,
                   coalesce(l.i_name, item.i_name) AS i_name, coalesce(l.i_data, item.i_data) AS i_data
              FROM unnest(p_i_ids, p_supply, p_qty, i_prices, i_names, v_data)
                   WITH ORDINALITY AS l(i_id, supply_w_id, qty, i_price, i_name, i_data, n)
              LEFT JOIN item ON v_data IS NULL AND item.i_id = l.i_id),
        line AS (
            SELECT DISTINCT ON (i_id, supply_w_id) * FROM item_line
             WHERE i_price IS NOT NULL AND n <> ALL (v_numbers) ORDER BY i_id, supply_w_id, n),
        stocked AS (
            UPDATE stock SET s_quantity = CASE WHEN s_quantity >= line.qty + 10 THEN s_quantity - line.qty
                                               ELSE s_quantity - line.qty + 91 END,
                             s_ytd = s_ytd + line.qty, s_order_cnt = s_order_cnt + 1,
                             s_remote_cnt = s_remote_cnt + CASE WHEN line.supply_w_id <> p_w_id THEN 1 ELSE 0 END
              FROM line WHERE s_i_id = line.i_id AND s_w_id = line.supply_w_id
            RETURNING line.n, line.i_id, line.supply_w_id, line.qty, round(line.qty * line.i_price, 2) AS amount,
                      s_quantity, CASE WHEN strpos(line.i_data, 'ORIGINAL') > 0 AND strpos(s_data, 'ORIGINAL') > 0
                                       THEN 'B' ELSE 'G' END AS brand,
                      CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                                  WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                                  WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                                  ELSE s_dist_10 END AS dist_info),
        lined AS (
            INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                    ol_quantity, ol_amount, ol_dist_info)
            SELECT v_o_id, p_d_id, p_w_id, n, i_id, supply_w_id, NULL, qty, amount, dist_info FROM stocked)
        SELECT (SELECT count(i_price) FROM item_line), (SELECT array_agg(i_name ORDER BY n) FROM item_line),
               (SELECT array_agg(i_price ORDER BY n) FROM item_line), (SELECT array_agg(i_data ORDER BY n) FROM item_line),
               array_agg(n ORDER BY n), array_agg(s_quantity ORDER BY n), array_agg(brand ORDER BY n),
               array_agg(amount ORDER BY n)
          INTO v_found, i_names, i_prices, v_data, v_new, v_quantities, v_brands, v_amounts FROM stocked;
        IF v_found < v_count THEN
            RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'MX001';  -- 2.4.2.3
        END IF;
        IF v_new IS NULL THEN  -- a database without the stock row of a valid item
            RAISE EXCEPTION 'no stock row for an item of order % in district % of warehouse %', v_o_id, p_d_id, p_w_id;
        END IF;
        v_numbers := v_numbers || v_new; s_quantities := s_quantities || v_quantities;
        brand_generic := brand_generic || v_brands; ol_amounts := ol_amounts || v_amounts;
        v_rounds := v_rounds + 1;
    END LOOP;
    IF v_rounds > 1 THEN  -- the lines' values in line order
        SELECT array_agg(q ORDER BY n), array_agg(b ORDER BY n), array_agg(a ORDER BY n)
          INTO s_quantities, brand_generic, ol_amounts
          FROM unnest(v_numbers, s_quantities, brand_generic, ol_amounts) AS r(n, q, b, a);
    END IF;
    total_amount := round((SELECT sum(a) FROM unnest(ol_amounts) AS a) * (1 - c_discount) * (1 + w_tax + d_tax), 2);
END $$;

-- 2.5.2.2 / 2.6.2.2: of the customers with this last name sorted by C_FIRST, the one at ceil(n/2)
CREATE OR REPLACE FUNCTION tpcc_customer_by_name(p_w_id int, p_d_id int, p_c_last text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_c_id int;
BEGIN
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
     ORDER BY c_first
    OFFSET (SELECT (count(*) - 1) / 2 FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last)
     LIMIT 1;
    IF v_c_id IS NULL THEN
        RAISE EXCEPTION 'no customer named % in warehouse % district %', p_c_last, p_w_id, p_d_id;
    END IF;
    RETURN v_c_id;
END $$;

-- Payment: each row is changed before it is read (UPDATE ... RETURNING), the customer's in one statement
-- whichever its credit: a customer with bad credit also gets the payment's history at the head of C_DATA.
CREATE OR REPLACE FUNCTION tpcc_payment(
    p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int, p_c_id int, p_c_last text, p_amount numeric,
    p_date timestamp,
    OUT c_id int, OUT w_street_1 text, OUT w_street_2 text, OUT w_city text, OUT w_state text, OUT w_zip text,
    OUT d_street_1 text, OUT d_street_2 text, OUT d_city text, OUT d_state text, OUT d_zip text,
    OUT c_first text, OUT c_middle text, OUT c_last text, OUT c_street_1 text, OUT c_street_2 text,
    OUT c_city text, OUT c_state text, OUT c_zip text, OUT c_phone text, OUT c_since timestamp,
    OUT c_credit text, OUT c_credit_lim numeric, OUT c_discount numeric, OUT c_balance numeric,
    OUT c_data text, OUT h_date timestamp)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE v_w_name text; v_d_name text; v_c_id int := p_c_id;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id
    RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip
         INTO v_w_name, w_street_1, w_street_2, w_city, w_state, w_zip;
    UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip
         INTO v_d_name, d_street_1, d_street_2, d_city, d_state, d_zip;
    IF v_c_id IS NULL THEN
        v_c_id := tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
    END IF;
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1,
                        c_data = CASE WHEN c_credit <> 'BC' THEN c_data
                                      ELSE substr(format('%s %s %s %s %s %s ', v_c_id, p_c_d_id, p_c_w_id, p_d_id,
                                                         p_w_id, to_char(p_amount, 'FM9999990.00')) || c_data, 1, 500)
                                 END
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id
    RETURNING c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since,
              c_credit, c_credit_lim, c_discount, c_balance,
              CASE WHEN c_credit = 'BC' THEN substr(c_data, 1, 200) END
         INTO c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since,
              c_credit, c_credit_lim, c_discount, c_balance, c_data;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, p_date, p_amount, v_w_name || '    ' || v_d_name);
    c_id := v_c_id;
    h_date := p_date;
END $$;

-- Order-Status in one statement: at read committed every statement sees its own snapshot, so the balance
-- and the order's lines read by two statements could come from two committed states (3.4.0.1 forbids it).
CREATE OR REPLACE FUNCTION tpcc_order_status(
    p_w_id int, p_d_id int, p_c_id int, p_c_last text,
    OUT c_id int, OUT c_first text, OUT c_middle text, OUT c_last text, OUT c_balance numeric,
    OUT o_id int, OUT o_entry_d timestamp, OUT o_carrier_id int, OUT ol_supply_w_ids int[], OUT ol_i_ids int[],
    OUT ol_quantities int[], OUT ol_amounts numeric[], OUT ol_delivery_ds timestamp[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    WITH named AS (  -- 2.6.2.2: by last name, the customer at ceil(n/2) in C_FIRST order
        SELECT c_id, c_first, c_middle, c_last, c_balance, row_number() OVER (ORDER BY c_first) AS position,
               count(*) OVER () AS found
          FROM customer WHERE p_c_id IS NULL AND c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last),
    chosen AS (
        SELECT c_id, c_first, c_middle, c_last, c_balance FROM customer
         WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id
        UNION ALL
        SELECT c_id, c_first, c_middle, c_last, c_balance FROM named WHERE position = (found + 1) / 2)
    SELECT chosen.c_id, chosen.c_first, chosen.c_middle, chosen.c_last, chosen.c_balance,
           latest.o_id, latest.o_entry_d, latest.o_carrier_id, lines.supply, lines.items, lines.quantities,
           lines.amounts, lines.delivered
      INTO c_id, c_first, c_middle, c_last, c_balance, o_id, o_entry_d, o_carrier_id, ol_supply_w_ids, ol_i_ids,
           ol_quantities, ol_amounts, ol_delivery_ds
      FROM chosen
      LEFT JOIN LATERAL (
           SELECT o_id, o_entry_d, o_carrier_id FROM orders
            WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = chosen.c_id ORDER BY o_id DESC LIMIT 1) latest ON true
      LEFT JOIN LATERAL (
           SELECT array_agg(ol_supply_w_id ORDER BY ol_number) AS supply, array_agg(ol_i_id ORDER BY ol_number) AS items,
                  array_agg(ol_quantity ORDER BY ol_number) AS quantities,
                  array_agg(ol_amount ORDER BY ol_number) AS amounts,
                  array_agg(ol_delivery_d ORDER BY ol_number) AS delivered
             FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = latest.o_id) lines ON true;
    IF c_id IS NULL THEN
        RAISE EXCEPTION 'no customer % in warehouse % district %', coalesce(p_c_id::text, p_c_last), p_w_id, p_d_id;
    END IF;
END $$;

-- Delivery in one statement for all ten districts instead of six per district, each with its executor
-- start-up: measured alone, 10-20 % less server CPU per call (README). Each district's oldest new order is
-- locked before it is read: a Delivery that finds it locked by another waits, and once the other has deleted
-- it takes the next one (2.7.4.2: a district is skipped only when it has no undelivered order). Its order,
-- lines and customer follow, each step joining the rows the previous one returned. The result: the order
-- delivered in each district, NULL where there was none (2.7.2.3: the result file records both).
CREATE OR REPLACE FUNCTION tpcc_delivery(p_w_id int, p_carrier_id int, p_date timestamp) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE v_delivered int[];
BEGIN
    WITH oldest AS (
        SELECT d, oldest.no_o_id AS o_id FROM generate_series(1, 10) AS d
         CROSS JOIN LATERAL (
             SELECT no_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d
              ORDER BY no_o_id LIMIT 1 FOR UPDATE) oldest),
    taken AS (
        DELETE FROM new_order USING oldest
         WHERE no_w_id = p_w_id AND no_d_id = oldest.d AND no_o_id = oldest.o_id
        RETURNING no_d_id, no_o_id),
    carried AS (
        UPDATE orders SET o_carrier_id = p_carrier_id FROM taken
         WHERE o_w_id = p_w_id AND o_d_id = no_d_id AND o_id = no_o_id
        RETURNING o_d_id, o_id, o_c_id),
    lines AS (
        UPDATE order_line SET ol_delivery_d = p_date FROM carried
         WHERE ol_w_id = p_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
        RETURNING ol_d_id, ol_amount),
    totals AS (
        SELECT ol_d_id, sum(ol_amount) AS amount FROM lines GROUP BY ol_d_id),
    paid AS (
        UPDATE customer SET c_balance = c_balance + amount, c_delivery_cnt = c_delivery_cnt + 1
          FROM carried JOIN totals ON ol_d_id = o_d_id
         WHERE c_w_id = p_w_id AND c_d_id = o_d_id AND c_id = o_c_id)
    SELECT array_agg(taken.no_o_id ORDER BY d) INTO v_delivered
      FROM generate_series(1, 10) AS d LEFT JOIN taken ON no_d_id = d;
    RETURN v_delivered;
END $$;

-- Stock-Level (2.8.2.2): committed reads are enough (level 1, 3.4.0.1).
CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w_id int, p_d_id int, p_threshold int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_next int; v_low int;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line, stock
     WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next AND ol_o_id >= v_next - 20
       AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    RETURN v_low;
END $$;
