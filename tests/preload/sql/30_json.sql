CREATE TABLE docs(id INTEGER PRIMARY KEY, doc TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<500) INSERT INTO docs SELECT x, json_object('n', x, 'tags', json_array('a', x % 3)) FROM c;
UPDATE docs SET doc = json_set(doc, '$.seen', 1) WHERE id % 4 = 0;
CREATE TABLE summary AS SELECT json_extract(doc, '$.tags[1]') AS tag, count(*) AS n FROM docs GROUP BY 1;
