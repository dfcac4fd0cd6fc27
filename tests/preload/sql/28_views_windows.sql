CREATE TABLE sales(id INTEGER PRIMARY KEY, region TEXT, amount INT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000) INSERT INTO sales SELECT x, 'r' || (x % 5), (x * 37) % 1000 FROM c;
CREATE VIEW totals AS SELECT region, sum(amount) AS total FROM sales GROUP BY region;
CREATE TABLE ranked AS SELECT id, region, amount,
  rank() OVER (PARTITION BY region ORDER BY amount DESC, id) AS r FROM sales;
CREATE TABLE snapshot AS SELECT * FROM totals;
