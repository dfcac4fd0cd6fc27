CREATE TABLE kv(key INTEGER PRIMARY KEY, value BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<500) INSERT INTO kv SELECT x, printf('value-%08d', x) FROM c;
UPDATE kv SET value = value || '-updated' WHERE key % 3 = 0;
DELETE FROM kv WHERE key % 7 = 0;
INSERT INTO kv VALUES(1000, 'last');
