PRAGMA auto_vacuum = INCREMENTAL;
CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2000) INSERT INTO t SELECT x, printf('%.*c', 300, 'i') FROM c;
DELETE FROM t WHERE id % 3 <> 0;
PRAGMA incremental_vacuum(50);
PRAGMA incremental_vacuum;
