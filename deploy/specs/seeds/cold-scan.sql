-- One sequential scan of pgbench_accounts per transaction (the accounts' balances summed).
SELECT sum(abalance) FROM pgbench_accounts;
