-- The table the WAL block size study inserts into.
create table seed_inserts (id bigint not null, payload text not null);
