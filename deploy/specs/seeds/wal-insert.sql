-- One single-row INSERT per transaction: the simple insert load of the WAL block size study.
\set id random(1, 1000000000)
insert into seed_inserts (id, payload) values (:id, repeat('x', 100));
