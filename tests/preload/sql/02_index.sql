CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INT);
CREATE INDEX p_city ON p(city, age);
CREATE UNIQUE INDEX p_name ON p(name);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2000) INSERT INTO p SELECT x, 'n' || x, 'city' || (x % 37), x % 90 FROM c;
UPDATE p SET city = 'moved' WHERE age > 80;
DELETE FROM p WHERE city = 'city5';
CREATE INDEX p_age ON p(age);
