CREATE TABLE acct(id INTEGER PRIMARY KEY, bal INT);
CREATE TABLE audit(seq INTEGER PRIMARY KEY, id INT, old INT, new INT);
CREATE TRIGGER acct_upd AFTER UPDATE ON acct BEGIN
  INSERT INTO audit(id, old, new) VALUES(old.id, old.bal, new.bal);
END;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<300) INSERT INTO acct SELECT x, x * 10 FROM c;
UPDATE acct SET bal = bal + 5 WHERE id % 2 = 0;
UPDATE acct SET bal = bal - 1 WHERE id % 5 = 0;
