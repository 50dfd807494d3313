\set bid random(1, 2)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT bbalance FROM pgbench_branches WHERE bid = :bid;
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = :bid;
END;
