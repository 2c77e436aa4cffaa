-- TPC-C transactions as MariaDB stored functions: one round trip per business transaction. Functions, not
-- procedures: a function's result is the one row of a SELECT, which any client reads (a C client such as
-- sysbench reads a CALL's result sets only with effort). Each returns the data of its output screen
-- (workloads/tpcc/screens.py) as a JSON array, in the order of the PostgreSQL functions' OUT columns. A numeric
-- variable goes in as "v + 0": JSON_ARRAY writes a stored program's variable as a string, an expression as a number.
-- Isolation (3.4.0.1): every row read and then changed is locked before it is read (SELECT ... FOR UPDATE,
-- or an UPDATE first), and each call is one statement in autocommit mode: one transaction, one read view.
-- Errors are never caught here: deadlocks (1213) and lock wait timeouts (1205) reach the driver's retry policy.
-- The New-Order rollback of 2.4.2.3 raises SQLSTATE MX001, which the driver counts as "rolled back": the
-- statement's changes are undone with it.
-- Every run installs them afresh, so a database built by an older Maximus runs this version's functions.

DROP FUNCTION IF EXISTS tpcc_new_order;
DROP FUNCTION IF EXISTS tpcc_customer_by_name;
DROP FUNCTION IF EXISTS tpcc_payment;
DROP FUNCTION IF EXISTS tpcc_order_status;
DROP FUNCTION IF EXISTS tpcc_delivery;
DROP FUNCTION IF EXISTS tpcc_stock_level;

-- New-Order (2.4.2.2): the district row locked first, then the order entered, then its lines. p_items, p_supply
-- and p_qty are JSON arrays of integers, one entry per line; every statement over the lines reads them as one
-- derived table (the lines' numbers from the items' JSON_TABLE, supply and quantity by position: three joined
-- JSON_TABLEs cost a join buffer each). An order whose lines are distinct stock rows (nearly every one) is entered
-- set-wise: one UPDATE changes its stock rows in line order, one INSERT enters its lines, one SELECT reads them
-- back (a third of the server CPU of one statement per line, bench/README.md). An item ordered twice from one
-- warehouse is one stock row that one UPDATE would change only once, so such an order is walked line by line, each
-- line taking its quantity from the stock row as the earlier line left it.
CREATE FUNCTION tpcc_new_order(p_w_id INT, p_d_id INT, p_c_id INT, p_items TEXT, p_supply TEXT, p_qty TEXT,
                               p_entry DATETIME(6)) RETURNS LONGTEXT
NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
    DECLARE v_count, v_remote, v_distinct, v_valid INT;
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_o_id, v_i_id, v_supply, v_qty, v_s_quantity INT;
    DECLARE v_d_tax, v_w_tax, v_discount DECIMAL(4,4);
    DECLARE v_c_last VARCHAR(16);
    DECLARE v_credit CHAR(2);
    DECLARE v_price DECIMAL(5,2);
    DECLARE v_name VARCHAR(24);
    DECLARE v_i_data, v_s_data VARCHAR(50);
    DECLARE v_dist CHAR(24);
    DECLARE v_amount DECIMAL(6,2);
    DECLARE v_sum DECIMAL(12,2) DEFAULT 0;
    DECLARE v_found INT;
    DECLARE v_names, v_prices, v_quantities, v_brands, v_amounts LONGTEXT DEFAULT '[]';
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;

    SELECT d_next_o_id, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id FOR UPDATE;
    UPDATE district SET d_next_o_id = v_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_c_last, v_credit, v_w_tax
      FROM customer, warehouse WHERE w_id = p_w_id AND c_w_id = w_id AND c_d_id = p_d_id AND c_id = p_c_id;
    SELECT COUNT(*), SUM(l.w <> p_w_id), COUNT(DISTINCT l.i, l.w), COUNT(i_id)
      INTO v_count, v_remote, v_distinct, v_valid
      FROM (SELECT a.i, CAST(JSON_VALUE(p_supply, CONCAT('$[', a.n - 1, ']')) AS INT) AS w
              FROM JSON_TABLE(p_items, '$[*]' COLUMNS (n FOR ORDINALITY, i INT PATH '$')) AS a) AS l
      LEFT JOIN item ON i_id = l.i;
    IF v_valid < v_count THEN
        SIGNAL SQLSTATE 'MX001' SET MESSAGE_TEXT = 'Item number is not valid';  -- 2.4.2.3
    END IF;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d_id, p_w_id, p_c_id, p_entry, NULL, v_count, IF(v_remote = 0, 1, 0));
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
    IF v_distinct = v_count THEN
        UPDATE stock
          JOIN (SELECT a.n, a.i, CAST(JSON_VALUE(p_supply, CONCAT('$[', a.n - 1, ']')) AS INT) AS w,
                       CAST(JSON_VALUE(p_qty, CONCAT('$[', a.n - 1, ']')) AS INT) AS q
                  FROM JSON_TABLE(p_items, '$[*]' COLUMNS (n FOR ORDINALITY, i INT PATH '$')) AS a) AS l
            ON s_i_id = l.i AND s_w_id = l.w
           SET s_quantity = IF(s_quantity >= l.q + 10, s_quantity - l.q, s_quantity - l.q + 91),
               s_ytd = s_ytd + l.q, s_order_cnt = s_order_cnt + 1,
               s_remote_cnt = s_remote_cnt + IF(l.w <> p_w_id, 1, 0);
        IF ROW_COUNT() < v_count THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no stock row for an item of the order';
        END IF;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
        SELECT v_o_id, p_d_id, p_w_id, l.n, l.i, l.w, NULL, l.q, l.q * i_price,
               CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                           WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                           WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
          FROM (SELECT a.n, a.i, CAST(JSON_VALUE(p_supply, CONCAT('$[', a.n - 1, ']')) AS INT) AS w,
                       CAST(JSON_VALUE(p_qty, CONCAT('$[', a.n - 1, ']')) AS INT) AS q
                  FROM JSON_TABLE(p_items, '$[*]' COLUMNS (n FOR ORDINALITY, i INT PATH '$')) AS a) AS l
          JOIN item ON i_id = l.i
          JOIN stock ON s_i_id = l.i AND s_w_id = l.w;
        SELECT JSON_ARRAYAGG(i_name ORDER BY ol_number), JSON_ARRAYAGG(i_price ORDER BY ol_number),
               JSON_ARRAYAGG(s_quantity ORDER BY ol_number),
               JSON_ARRAYAGG(IF(INSTR(i_data, 'ORIGINAL') > 0 AND INSTR(s_data, 'ORIGINAL') > 0, 'B', 'G')
                             ORDER BY ol_number),
               JSON_ARRAYAGG(ol_amount ORDER BY ol_number), SUM(ol_amount)
          INTO v_names, v_prices, v_quantities, v_brands, v_amounts, v_sum
          FROM order_line
          JOIN item ON i_id = ol_i_id
          JOIN stock ON s_i_id = ol_i_id AND s_w_id = ol_supply_w_id
         WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
    ELSE
        WHILE v_n < v_count DO
            SET v_i_id = JSON_VALUE(p_items, CONCAT('$[', v_n, ']')),
                v_supply = JSON_VALUE(p_supply, CONCAT('$[', v_n, ']')),
                v_qty = JSON_VALUE(p_qty, CONCAT('$[', v_n, ']')),
                v_found = 1;
            SELECT i_price, i_name, i_data INTO v_price, v_name, v_i_data FROM item WHERE i_id = v_i_id;
            SELECT s_quantity, s_data,
                   CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                               WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                               WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
              INTO v_s_quantity, v_s_data, v_dist
              FROM stock WHERE s_i_id = v_i_id AND s_w_id = v_supply FOR UPDATE;
            IF v_found = 0 THEN
                SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no stock row for an item of the order';
            END IF;
            SET v_s_quantity = IF(v_s_quantity >= v_qty + 10, v_s_quantity - v_qty, v_s_quantity - v_qty + 91);
            UPDATE stock SET s_quantity = v_s_quantity, s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
                             s_remote_cnt = s_remote_cnt + IF(v_supply <> p_w_id, 1, 0)
             WHERE s_i_id = v_i_id AND s_w_id = v_supply;
            SET v_amount = v_qty * v_price, v_sum = v_sum + v_amount;
            INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                    ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o_id, p_d_id, p_w_id, v_n + 1, v_i_id, v_supply, NULL, v_qty, v_amount, v_dist);
            SET v_names = JSON_ARRAY_APPEND(v_names, '$', v_name),
                v_prices = JSON_ARRAY_APPEND(v_prices, '$', v_price + 0),
                v_quantities = JSON_ARRAY_APPEND(v_quantities, '$', v_s_quantity + 0),
                v_brands = JSON_ARRAY_APPEND(v_brands, '$',
                                             IF(INSTR(v_i_data, 'ORIGINAL') > 0 AND INSTR(v_s_data, 'ORIGINAL') > 0,
                                                'B', 'G')),
                v_amounts = JSON_ARRAY_APPEND(v_amounts, '$', v_amount + 0),
                v_n = v_n + 1;
        END WHILE;
    END IF;
    RETURN JSON_ARRAY(v_o_id + 0, v_c_last, v_credit, v_discount + 0, v_w_tax + 0, v_d_tax + 0, p_entry,
                      ROUND(v_sum * (1 - v_discount) * (1 + v_w_tax + v_d_tax), 2),
                      JSON_QUERY(v_names, '$'), JSON_QUERY(v_prices, '$'), JSON_QUERY(v_quantities, '$'),
                      JSON_QUERY(v_brands, '$'), JSON_QUERY(v_amounts, '$'));
END;


-- 2.5.2.2 / 2.6.2.2: of the customers with this last name sorted by C_FIRST, the one at ceil(n/2)
CREATE FUNCTION tpcc_customer_by_name(p_w_id INT, p_d_id INT, p_c_last VARCHAR(16)) RETURNS INT
NOT DETERMINISTIC READS SQL DATA
BEGIN
    DECLARE v_found, v_skip INT;
    DECLARE v_c_id INT DEFAULT NULL;
    SELECT COUNT(*) INTO v_found FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
    IF v_found = 0 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no customer with this last name in the district';
    END IF;
    SET v_skip = (v_found - 1) DIV 2;
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
     ORDER BY c_first LIMIT v_skip, 1;
    RETURN v_c_id;
END;

-- Payment: the warehouse's and the district's rows changed before they are read, the customer's row locked
-- before it is read; a customer with bad credit also gets the payment's history at the head of C_DATA.
CREATE FUNCTION tpcc_payment(p_w_id INT, p_d_id INT, p_c_w_id INT, p_c_d_id INT, p_c_id INT, p_c_last VARCHAR(16),
                             p_amount DECIMAL(6,2), p_date DATETIME(6)) RETURNS LONGTEXT
NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
    DECLARE v_c_id INT DEFAULT p_c_id;
    DECLARE v_w_name, v_d_name VARCHAR(10);
    DECLARE v_w_street_1, v_w_street_2, v_w_city, v_d_street_1, v_d_street_2, v_d_city VARCHAR(20);
    DECLARE v_w_state, v_d_state CHAR(2);
    DECLARE v_w_zip, v_d_zip CHAR(9);
    DECLARE v_first VARCHAR(16);
    DECLARE v_middle CHAR(2);
    DECLARE v_last VARCHAR(16);
    DECLARE v_street_1, v_street_2, v_city VARCHAR(20);
    DECLARE v_state CHAR(2);
    DECLARE v_zip CHAR(9);
    DECLARE v_phone CHAR(16);
    DECLARE v_since DATETIME(6);
    DECLARE v_credit CHAR(2);
    DECLARE v_limit, v_balance DECIMAL(12,2);
    DECLARE v_discount DECIMAL(4,4);
    DECLARE v_data VARCHAR(500);

    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id;
    SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip
      INTO v_w_name, v_w_street_1, v_w_street_2, v_w_city, v_w_state, v_w_zip FROM warehouse WHERE w_id = p_w_id;
    UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip
      INTO v_d_name, v_d_street_1, v_d_street_2, v_d_city, v_d_state, v_d_zip
      FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    IF v_c_id IS NULL THEN
        SET v_c_id = tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
    END IF;
    SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit,
           c_credit_lim, c_discount, c_balance
      INTO v_first, v_middle, v_last, v_street_1, v_street_2, v_city, v_state, v_zip, v_phone, v_since, v_credit,
           v_limit, v_discount, v_balance
      FROM customer WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1,
                        c_data = IF(c_credit <> 'BC', c_data,
                                    LEFT(CONCAT(v_c_id, ' ', p_c_d_id, ' ', p_c_w_id, ' ', p_d_id, ' ', p_w_id, ' ',
                                                p_amount, ' ', c_data), 500))
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
    IF v_credit = 'BC' THEN
        SELECT LEFT(c_data, 200) INTO v_data FROM customer WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, p_date, p_amount, CONCAT(v_w_name, '    ', v_d_name));
    RETURN JSON_ARRAY(v_c_id + 0, v_w_street_1, v_w_street_2, v_w_city, v_w_state, v_w_zip,
                      v_d_street_1, v_d_street_2, v_d_city, v_d_state, v_d_zip,
                      v_first, v_middle, v_last, v_street_1, v_street_2, v_city, v_state, v_zip, v_phone, v_since,
                      v_credit, v_limit + 0, v_discount + 0, v_balance - p_amount, v_data, p_date);
END;

-- Order-Status: one statement in autocommit mode reads one snapshot (3.4.0.1): the customer, their latest order
-- and its lines as of the call's start.
CREATE FUNCTION tpcc_order_status(p_w_id INT, p_d_id INT, p_c_id INT, p_c_last VARCHAR(16)) RETURNS LONGTEXT
NOT DETERMINISTIC READS SQL DATA
BEGIN
    DECLARE v_c_id INT DEFAULT p_c_id;
    DECLARE v_first VARCHAR(16);
    DECLARE v_middle CHAR(2);
    DECLARE v_last VARCHAR(16);
    DECLARE v_balance DECIMAL(12,2);
    DECLARE v_o_id, v_carrier INT DEFAULT NULL;
    DECLARE v_entry DATETIME(6) DEFAULT NULL;
    DECLARE v_lines LONGTEXT DEFAULT NULL;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_o_id = NULL;

    IF v_c_id IS NULL THEN
        SET v_c_id = tpcc_customer_by_name(p_w_id, p_d_id, p_c_last);
    END IF;
    SELECT c_first, c_middle, c_last, c_balance INTO v_first, v_middle, v_last, v_balance
      FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
    SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier FROM orders
     WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id ORDER BY o_id DESC LIMIT 1;
    IF v_o_id IS NOT NULL THEN
        SELECT JSON_ARRAY(JSON_ARRAYAGG(ol_supply_w_id ORDER BY ol_number), JSON_ARRAYAGG(ol_i_id ORDER BY ol_number),
                          JSON_ARRAYAGG(ol_quantity ORDER BY ol_number), JSON_ARRAYAGG(ol_amount ORDER BY ol_number),
                          JSON_ARRAYAGG(ol_delivery_d ORDER BY ol_number))
          INTO v_lines FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
    END IF;
    RETURN JSON_ARRAY(v_c_id + 0, v_first, v_middle, v_last, v_balance + 0, v_o_id + 0, v_entry, v_carrier + 0,
                      JSON_QUERY(v_lines, '$[0]'), JSON_QUERY(v_lines, '$[1]'), JSON_QUERY(v_lines, '$[2]'),
                      JSON_QUERY(v_lines, '$[3]'), JSON_QUERY(v_lines, '$[4]'));
END;

-- Delivery: each district's oldest new order locked before it is read. A Delivery that finds it locked by
-- another waits, and once the other has deleted it takes the next one (2.7.4.2: a district is skipped only when
-- it has no undelivered order). The result: the order delivered in each district, null where there was none
-- (2.7.2.3: the result file records both).
CREATE FUNCTION tpcc_delivery(p_w_id INT, p_carrier_id INT, p_date DATETIME(6)) RETURNS TEXT
NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
    DECLARE v_d INT DEFAULT 1;
    DECLARE v_o_id, v_c_id INT;
    DECLARE v_amount DECIMAL(12,2);
    DECLARE v_found INT;
    DECLARE v_delivered TEXT DEFAULT '';
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    WHILE v_d <= 10 DO
        SET v_found = 1;
        SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d
         ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF v_found = 0 THEN
            SET v_delivered = CONCAT(v_delivered, IF(v_d > 1, ',', ''), 'null');
        ELSE
            DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d AND no_o_id = v_o_id;
            UPDATE orders SET o_carrier_id = p_carrier_id WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id;
            SELECT o_c_id INTO v_c_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id;
            UPDATE order_line SET ol_delivery_d = p_date WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
            SELECT SUM(ol_amount) INTO v_amount FROM order_line
             WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
            UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
             WHERE c_w_id = p_w_id AND c_d_id = v_d AND c_id = v_c_id;
            SET v_delivered = CONCAT(v_delivered, IF(v_d > 1, ',', ''), v_o_id);
        END IF;
        SET v_d = v_d + 1;
    END WHILE;
    RETURN CONCAT('[', v_delivered, ']');
END;

-- Stock-Level (2.8.2.2): committed reads are enough (level 1, 3.4.0.1).
CREATE FUNCTION tpcc_stock_level(p_w_id INT, p_d_id INT, p_threshold INT) RETURNS INT
NOT DETERMINISTIC READS SQL DATA
BEGIN
    DECLARE v_next, v_low INT;
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT COUNT(DISTINCT s_i_id) INTO v_low FROM order_line, stock
     WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next AND ol_o_id >= v_next - 20
       AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    RETURN v_low;
END;
